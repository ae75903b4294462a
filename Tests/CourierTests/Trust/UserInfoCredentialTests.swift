import Foundation
import Testing

@testable import Courier

/// The credential a URL's `user:password@` gives default handling: each part percent-decoded exactly once, as Darwin
/// and curl read them. `URL.user` comes decoded and `URL.password` does not, so decoding both again broke user names.
@Suite("User info credential")
struct UserInfoCredentialTests {
    @Test(arguments: [
        ("http://alice:wonder%20land@h.example/", "alice", "wonder land"),
        ("http://us%40er:p%3Ass@h.example/", "us@er", "p:ss"),
        ("http://a%25b:c%25d@h.example/", "a%b", "c%d"),
        ("http://a%2541:c%2541@h.example/", "a%41", "c%41"),
        ("http://us%C3%A9r:p%C3%A9@h.example/", "usér", "pé"),
    ])
    func eachPartIsDecodedOnce(url: String, user: String, password: String) throws {
        let parsed = try #require(URL(string: url))
        let credential = try #require(AuthenticationStage.userInfoCredential(of: parsed))
        #expect(credential.user == user)
        #expect(credential.password == password)
        #expect(credential.persistence == .forSession)
    }

    @Test func aURLWithoutUserInfoGivesNone() throws {
        #expect(AuthenticationStage.userInfoCredential(of: try #require(URL(string: "http://h.example/"))) == nil)
    }
}
