import Foundation
import Testing

@testable import Courier

/// Reading the cookie file FoundationNetworking's `HTTPCookieStorage.shared` persists, with the path computed from an
/// injected environment and files in a temporary directory (never the real home directory).
@Suite("FoundationCookieFile")
struct FoundationCookieFileTests {
    @Test(
        "The path is FoundationNetworking's: XDG data home, bundle name without extension, .cookies.shared",
        arguments: [
            (["XDG_DATA_HOME": "/data"], "/usr/local/bin", "/home/u", "/data/bin/.cookies.shared"),
            ([:], "/opt/app/MyApp.app", "/home/u", "/home/u/.local/share/MyApp/.cookies.shared"),
            (["XDG_DATA_HOME": "relative/dir"], "/x/y/tool", "/home/u", "/home/u/.local/share/tool/.cookies.shared"),
            (["XDG_DATA_HOME": ""], "/x/my.tool.bundle", "/home/u", "/home/u/.local/share/my.tool/.cookies.shared"),
            ([:], "/", "/home/u", nil), ([:], "/x/tool", "", nil),
        ] as [([String: String], String, String, String?)])
    func path(environment: [String: String], bundlePath: String, home: String, expected: String?) {
        #expect(
            FoundationCookieFile.path(environment: environment, bundlePath: bundlePath, homeDirectory: home) == expected
        )
    }

    /// The shape FoundationNetworking's `persistableDictionary()` writes.
    private static func entry(name: String, domain: String, expires: Date, secure: Bool = false) -> [String: Any] {
        [
            "Name": name, "Value": "v-\(name)", "Path": "/", "Domain": domain, "Secure": secure, "Version": 0,
            "Expires": expires.timeIntervalSince1970, "Comment": "c", "Port": [NSNumber(value: 443)],
        ]
    }

    private func withTemporaryFile(_ data: Data, _ body: (String) throws -> Void) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent(".cookies.shared")
        try data.write(to: file)
        try body(file.path)
    }

    @Test("Unexpired cookies are imported into a storage; expired ones and bad entries are skipped")
    func importsCookies() throws {
        let future = Date(timeIntervalSinceNow: 3600)
        let plist: [String: Any] = [
            ".example.com/session": Self.entry(name: "session", domain: ".example.com", expires: future, secure: true),
            "api.example.com/token": Self.entry(name: "token", domain: "api.example.com", expires: future),
            "old.example.com/gone": Self.entry(
                name: "gone", domain: "old.example.com", expires: Date(timeIntervalSinceNow: -60)),
            "broken": ["Name": "no-path"],
            "not-a-dictionary": 42,
        ]
        let data = try PropertyListSerialization.data(fromPropertyList: plist, format: .xml, options: 0)
        try withTemporaryFile(data) { path in
            let storage = HTTPCookieStorage()
            storage.importFoundationCookies(fromFileAt: path)
            let cookies = (storage.cookies ?? []).sorted { $0.name < $1.name }
            #expect(cookies.map(\.name) == ["session", "token"])
            #expect(cookies.map(\.domain) == [".example.com", "api.example.com"])
            #expect(cookies.first?.isSecure == true)
            #expect(cookies.first?.value == "v-session")
            #expect(cookies.first?.comment == "c")
            let expires = try #require(cookies.first?.expiresDate)
            #expect(abs(expires.timeIntervalSince(future)) < 0.001)
            #expect(storage.cookies(for: URL(string: "https://www.example.com/")!)?.map(\.name) == ["session"])
        }
    }

    @Test(
        "A corrupt, empty or foreign file is ignored; an expiry that is not a date leaves a session cookie",
        arguments: [
            (Data("not a plist <<<".utf8), []), (Data(), []),
            (Data([0x62, 0x70, 0x6C, 0x69, 0x73, 0x74, 0x30, 0x30, 0xFF]), []),
            (try! PropertyListSerialization.data(fromPropertyList: ["a", "b"], format: .xml, options: 0), []),
            (
                try! PropertyListSerialization.data(
                    fromPropertyList: [
                        "k": ["Name": "n", "Value": "v", "Path": "/", "Domain": "d", "Expires": "soon"]
                    ],
                    format: .binary, options: 0), ["n=v"]
            ),
        ] as [(Data, [String])])
    func corruptFiles(data: Data, imported: [String]) throws {
        try withTemporaryFile(data) { path in
            let storage = HTTPCookieStorage()
            storage.importFoundationCookies(fromFileAt: path)
            let cookies = storage.cookies ?? []
            #expect(cookies.map { "\($0.name)=\($0.value)" } == imported)
            #expect(cookies.allSatisfy { $0.expiresDate == nil })
        }
    }

    @Test("A missing file or a directory is ignored")
    func missingFile() {
        let storage = HTTPCookieStorage()
        storage.importFoundationCookies(fromFileAt: "/nonexistent/courier/\(UUID().uuidString)/.cookies.shared")
        storage.importFoundationCookies(fromFileAt: FileManager.default.temporaryDirectory.path)
        #expect(storage.cookies?.isEmpty == true)
    }
}
