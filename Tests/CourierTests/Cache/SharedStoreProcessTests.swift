import Foundation
import Testing

@testable import Courier

/// Two processes that share one disk cache or one cookie jar (two apps, or an app and the daemon): child processes of
/// the test binary write at the same time, and every write is there afterwards.
///
/// A child is this test binary run again with ``childRole()`` selected and the role in the environment.
@Suite("Stores shared by processes")
struct SharedStoreProcessTests {
    static let roleVariable = "COURIER_STORE_CHILD_ROLE"
    static let folderVariable = "COURIER_STORE_CHILD_FOLDER"

    /// What a child does; runs only in a child.
    @Test(.enabled(if: ProcessInfo.processInfo.environment[roleVariable] != nil))
    func childRole() throws {
        let environment = ProcessInfo.processInfo.environment
        let role = try #require(environment[Self.roleVariable])
        let folder = URL(fileURLWithPath: try #require(environment[Self.folderVariable]))
        let parts = role.split(separator: ":")
        let prefix = String(parts[1])
        switch parts[0] {
        case "cache":
            let cache = URLCache(memoryCapacity: 0, diskCapacity: 50_000_000, directory: folder)
            for index in 0..<Self.entriesPerChild {
                let url = try #require(URL(string: "https://shared.test/\(prefix)/\(index)"))
                let response = try #require(
                    HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: [:]))
                cache.storeCachedResponse(
                    CachedURLResponse(response: response, data: Data("\(prefix)\(index)".utf8)),
                    for: URLRequest(url: url))
            }
        case "cookies":
            let storage = HTTPCookieStorage(persistentIn: folder)
            for index in 0..<Self.entriesPerChild {
                storage.setCookie(CookieJarTests.cookie("\(prefix)\(index)", domain: "\(prefix).shared.test"))
            }
            storage.flushToDisk()
        default:
            Issue.record("unknown role \(role)")
        }
    }

    static let entriesPerChild = 40
    /// One child per prefix, all started together.
    static let prefixes = ["a", "b", "c", "d"]

    /// Runs this test binary as a child in `role`, sharing `folder`.
    static func runChild(role: String, folder: URL) throws -> ChildProcess {
        var environment = ProcessInfo.processInfo.environment
        environment[roleVariable] = role
        environment[folderVariable] = folder.path
        return try ChildProcess(
            URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path,
            ["--testing-library", "swift-testing", "--filter", "SharedStoreProcessTests/childRole"],
            environment: environment)
    }

    @Test(.enabled(if: ProcessInfo.processInfo.environment[roleVariable] == nil))
    func twoProcessesWriteOneDiskCacheAtOnce() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "courier-shared-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        // Four at once: two processes that create a new database together raced in its migrations (one fell back
        // to memory only, losing every write); more children make that race likely enough to be caught.
        let children = try Self.prefixes.map { try Self.runChild(role: "cache:\($0)", folder: folder) }
        for child in children {
            #expect(await child.exitStatus() == 0)
        }
        let cache = URLCache(memoryCapacity: 0, diskCapacity: 50_000_000, directory: folder)
        for prefix in Self.prefixes {
            for index in 0..<Self.entriesPerChild {
                let url = try #require(URL(string: "https://shared.test/\(prefix)/\(index)"))
                #expect(cache.cachedResponse(for: URLRequest(url: url))?.data == Data("\(prefix)\(index)".utf8))
            }
        }
    }

    @Test(.enabled(if: ProcessInfo.processInfo.environment[roleVariable] == nil))
    func twoProcessesWriteOneCookieJarAtOnce() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-jar-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let children = try Self.prefixes.map { try Self.runChild(role: "cookies:\($0)", folder: folder) }
        for child in children {
            #expect(await child.exitStatus() == 0)
        }
        let names = Set(HTTPCookieStorage(persistentIn: folder).cookies?.map(\.name) ?? [])
        #expect(names.count == Self.prefixes.count * Self.entriesPerChild)
        #expect(names.contains("a0") && names.contains("d\(Self.entriesPerChild - 1)"))
    }
}
