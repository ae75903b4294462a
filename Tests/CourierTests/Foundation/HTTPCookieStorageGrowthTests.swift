import Foundation
import Testing

@testable import Courier

/// A cookie storage's memory follows the cookies it holds, not the cookies it ever held: a long-running process
/// whose server sets and clears a cookie on every exchange must not grow with the exchanges.
@Suite("HTTPCookieStorage does not grow with cookies it no longer holds")
struct HTTPCookieStorageGrowthTests {
    @Test func settingAndDeletingACookieOverAndOverKeepsTheStorageSmall() throws {
        let storage = HTTPCookieStorage()
        for round in 0..<3000 {
            let cookie = try #require(
                HTTPCookie(properties: [.name: "flash", .value: "\(round)", .domain: "example.com", .path: "/"]))
            storage.setCookie(cookie)
            storage.deleteCookie(cookie)
        }
        storage.setCookie(
            try #require(HTTPCookie(properties: [.name: "kept", .value: "v", .domain: "example.com", .path: "/"])))
        #expect(storage.cookies?.map(\.name) == ["kept"])
        // One cookie is stored; what the order keeps of the 3000 removed ones stays within the compaction's margin.
        #expect(storage.retainedOrderCount <= 2 * 1 + 1024 + 1)
    }
}
