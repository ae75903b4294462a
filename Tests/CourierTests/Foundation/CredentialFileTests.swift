import Foundation
import Testing

@testable import Courier

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// `URLCredentialStorage.shared`'s file: permanent credentials survive a relaunch (a new storage on the same file),
/// session ones do not, the file and folder are private, and a corrupt or planted file is ignored, never a crash.
@Suite("Credential file")
struct CredentialFileTests {
    private let space = URLProtectionSpace(
        host: "example.com", port: 443, protocol: NSURLProtectionSpaceHTTPS, realm: "api",
        authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
    private let proxySpace = URLProtectionSpace(
        proxyHost: "proxy.example", port: 3128, type: NSURLProtectionSpaceHTTPProxy, realm: "corp",
        authenticationMethod: NSURLAuthenticationMethodHTTPDigest)

    private func location() throws -> URL {
        try makeTemporaryDirectory().appendingPathComponent("data/courier/credentials.json")
    }

    /// Removes the temporary directory of a ``location()`` (each test's, holding passwords).
    private func removeDirectory(of file: URL) {
        let root = file.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        try? FileManager.default.removeItem(at: root)
    }

    private func mode(_ path: String) -> mode_t {
        var info = stat()
        #expect(lstat(path, &info) == 0)
        return info.st_mode & 0o777
    }

    @Test func permanentCredentialsSurviveARelaunchAndSessionOnesDoNot() throws {
        let file = try location()
        defer { removeDirectory(of: file) }
        let first = URLCredentialStorage(file: file)
        first.set(URLCredential(user: "alice", password: "pä:ss\"word", persistence: .permanent), for: space)
        first.set(URLCredential(user: "bob", password: "b", persistence: .forSession), for: space)
        first.setDefaultCredential(
            URLCredential(user: "carol", password: "c", persistence: .synchronizable), for: space)
        first.set(URLCredential(user: "dave", password: "d", persistence: .permanent), for: proxySpace)

        let relaunched = URLCredentialStorage(file: file)
        #expect(relaunched.credentials(for: space)?.keys.sorted() == ["alice", "carol"])
        #expect(relaunched.credentials(for: space)?["alice"]?.password == "pä:ss\"word")
        #expect(relaunched.credentials(for: space)?["alice"]?.persistence == .permanent)
        #expect(relaunched.defaultCredential(for: space)?.user == "carol")
        #expect(relaunched.defaultCredential(for: space)?.persistence == .synchronizable)
        #expect(relaunched.defaultCredential(for: proxySpace)?.user == "dave")
        #expect(relaunched.allCredentials.keys.contains { $0.isProxy() })

        relaunched.remove(URLCredential(user: "alice", password: "", persistence: .permanent), for: space)
        #expect(URLCredentialStorage(file: file).credentials(for: space)?.keys.sorted() == ["carol"])
    }

    /// The daemon's copy (`init(copyOf:)`) holds the file's credentials as they are, and its changes stay in memory:
    /// the app's file is never rewritten from it.
    @Test func aCopyReadsTheFileAndNeverWritesIt() throws {
        let file = try location()
        defer { removeDirectory(of: file) }
        let app = URLCredentialStorage(file: file)
        app.set(URLCredential(user: "alice", password: "a", persistence: .permanent), for: space)
        let before = try Data(contentsOf: file)

        let copy = URLCredentialStorage(copyOf: file)
        #expect(copy.credentials(for: space)?["alice"]?.password == "a")
        copy.set(URLCredential(user: "eve", password: "e", persistence: .permanent), for: space)
        copy.remove(URLCredential(user: "alice", password: "", persistence: .permanent), for: space)
        #expect(copy.credentials(for: space)?.keys.sorted() == ["eve"])
        #expect(try Data(contentsOf: file) == before)
        #expect(URLCredentialStorage(file: file).credentials(for: space)?.keys.sorted() == ["alice"])
    }

    /// Every app of the user shares the file, and each storage writes only its own changes over the file as it is:
    /// two processes (here two storages made before either wrote) keep each other's credentials and changes.
    @Test func twoProcessesKeepEachOthersCredentials() throws {
        let file = try location()
        defer { removeDirectory(of: file) }
        let first = URLCredentialStorage(file: file)
        let second = URLCredentialStorage(file: file)
        first.set(URLCredential(user: "alice", password: "a", persistence: .permanent), for: space)
        second.set(URLCredential(user: "bob", password: "b", persistence: .permanent), for: space)
        second.set(URLCredential(user: "dave", password: "d", persistence: .permanent), for: proxySpace)
        first.set(URLCredential(user: "erin", password: "e", persistence: .forSession), for: space)
        var onDisk = URLCredentialStorage(file: file)
        #expect(onDisk.credentials(for: space)?.keys.sorted() == ["alice", "bob"])
        #expect(onDisk.credentials(for: proxySpace)?.keys.sorted() == ["dave"])
        #expect(onDisk.defaultCredential(for: space) != nil)

        // A removal here reaches the file; a change there to a credential this one holds unchanged is kept.
        let third = URLCredentialStorage(file: file)
        second.set(URLCredential(user: "bob", password: "b2", persistence: .permanent), for: space)
        first.remove(URLCredential(user: "alice", password: "", persistence: .permanent), for: space)
        third.set(URLCredential(user: "frank", password: "f", persistence: .permanent), for: proxySpace)
        onDisk = URLCredentialStorage(file: file)
        #expect(onDisk.credentials(for: space)?.keys.sorted() == ["bob"])
        #expect(onDisk.credentials(for: space)?["bob"]?.password == "b2")
        #expect(onDisk.credentials(for: proxySpace)?.keys.sorted() == ["dave", "frank"])
        #expect(onDisk.defaultCredential(for: proxySpace)?.user == "dave")
    }

    @Test func aChangeMakingADefaultTakesItFromTheFilesOtherEntries() {
        func entry(_ user: String, isDefault: Bool, password: String = "p") -> CredentialFile.Entry {
            CredentialFile.Entry(
                host: "example.com", port: 443, protocol: "https", proxyType: nil, realm: "api",
                authenticationMethod: NSURLAuthenticationMethodHTTPBasic, user: user, password: password,
                synchronizable: false, isDefault: isDefault)
        }
        let onDisk = [entry("a", isDefault: true), entry("b", isDefault: false)]
        let merged = CredentialFile.merge(
            onDisk, from: [entry("b", isDefault: false)], to: [entry("b", isDefault: true, password: "q")])
        #expect(merged == [entry("a", isDefault: false), entry("b", isDefault: true, password: "q")])
        #expect(CredentialFile.merge(onDisk, from: onDisk, to: onDisk) == onDisk)
        #expect(
            CredentialFile.merge(onDisk, from: [entry("a", isDefault: true)], to: [])
                == [entry("b", isDefault: false)])
    }

    @Test func theFileIsPrivateAndReplacedWithoutLeftovers() throws {
        let file = try location()
        defer { removeDirectory(of: file) }
        let storage = URLCredentialStorage(file: file)
        for index in 0..<5 {
            storage.set(URLCredential(user: "u\(index)", password: "p", persistence: .permanent), for: space)
        }
        #expect(mode(file.path) == 0o600)
        #expect(mode(file.deletingLastPathComponent().path) == 0o700)
        let names = try FileManager.default.contentsOfDirectory(atPath: file.deletingLastPathComponent().path)
        #expect(names == ["credentials.json"])
    }

    @Test func onlySessionCredentialsWriteNoFile() throws {
        let file = try location()
        defer { removeDirectory(of: file) }
        let storage = URLCredentialStorage(file: file)
        storage.set(URLCredential(user: "s", password: "p", persistence: .forSession), for: space)
        #expect(!FileManager.default.fileExists(atPath: file.path))
    }

    @Test(arguments: [
        Data("not json".utf8), Data(), Data("{\"version\":2,\"credentials\":[]}".utf8),
        Data("{\"version\":1,\"credentials\":[{\"host\":1}]}".utf8), Data([0, 0xFF, 0xFE]),
    ])
    func aCorruptFileIsIgnoredAndReplacedAtTheNextChange(contents: Data) throws {
        let file = try location()
        defer { removeDirectory(of: file) }
        try FileManager.default.createDirectory(
            at: file.deletingLastPathComponent(), withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        try contents.write(to: file)
        let storage = URLCredentialStorage(file: file)
        #expect(storage.allCredentials.isEmpty)
        storage.set(URLCredential(user: "new", password: "p", persistence: .permanent), for: space)
        #expect(URLCredentialStorage(file: file).credentials(for: space)?.keys.sorted() == ["new"])
    }

    @Test func aFileInAFolderOthersCanWriteIsNotTrustedOrWritten() throws {
        let file = try location()
        defer { removeDirectory(of: file) }
        let folder = file.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let planted = URLCredentialStorage(file: file)
        planted.set(URLCredential(user: "x", password: "p", persistence: .permanent), for: space)
        chmod(folder.path, 0o777)
        // Another user could have replaced the file: it is not read, and nothing is written there.
        let storage = URLCredentialStorage(file: file)
        #expect(storage.allCredentials.isEmpty)
        let before = try Data(contentsOf: file)
        storage.set(URLCredential(user: "y", password: "secret", persistence: .permanent), for: space)
        #expect(try Data(contentsOf: file) == before)
        #expect(storage.credentials(for: space)?["y"] != nil)
    }

    @Test func theDefaultLocationFollowsXDG() {
        #expect(
            CredentialFile.defaultLocation(environment: ["XDG_DATA_HOME": "/data", "HOME": "/home/u"])?.path
                == "/data/courier/credentials.json")
        #expect(
            CredentialFile.defaultLocation(environment: ["XDG_DATA_HOME": "relative", "HOME": "/home/u"])?.path
                == "/home/u/.local/share/courier/credentials.json")
        #expect(CredentialFile.defaultLocation(environment: ["HOME": "/"]) == nil)
        #expect(CredentialFile.defaultLocation(environment: [:]) == nil)
    }
}
