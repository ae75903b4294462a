import Courier
import Foundation
import Testing

/// swift-corelibs-foundation's `TestURLCredentialStorage`, ported (the notification tests belong with the
/// notifications themselves). Each test uses a fresh storage instead of `URLCredentialStorage.shared`.
@Suite("URLCredentialStorage compatibility")
struct URLCredentialStorageCompatibilityTests {
    private let space = URLProtectionSpace(
        host: "example.com", port: 0, protocol: NSURLProtectionSpaceHTTP, realm: nil,
        authenticationMethod: NSURLAuthenticationMethodDefault)
    private let wrongSpace = URLProtectionSpace(
        host: "example2.com", port: 0, protocol: NSURLProtectionSpaceHTTP, realm: nil,
        authenticationMethod: NSURLAuthenticationMethodDefault)
    private let user1 = URLCredential(user: "user1", password: "password1", persistence: .forSession)
    private let user2 = URLCredential(user: "user2", password: "password2", persistence: .forSession)

    @Test("A session credential is returned for its protection space only")
    func rightSpace() {
        let storage = URLCredentialStorage()
        #expect(storage.allCredentials.isEmpty)
        storage.set(user1, for: space)
        #expect(storage.allCredentials.count == 1)
        #expect(storage.credentials(for: space) == ["user1": user1])
        #expect(storage.credentials(for: wrongSpace) == nil)
    }

    @Test(
        "The first credential stored for a space becomes its default",
        arguments: [URLCredential.Persistence.forSession, .permanent])
    func firstBecomesDefault(persistence: URLCredential.Persistence) {
        let storage = URLCredentialStorage()
        let first = URLCredential(user: "first", password: "1", persistence: persistence)
        storage.set(first, for: space)
        #expect(storage.defaultCredential(for: space) == first)
        storage.set(URLCredential(user: "second", password: "2", persistence: persistence), for: space)
        #expect(storage.defaultCredential(for: space) == first)
        #expect(storage.defaultCredential(for: wrongSpace) == nil)
    }

    @Test("A credential set as default is returned as default and stored")
    func setAsDefault() {
        let storage = URLCredentialStorage()
        storage.setDefaultCredential(user1, for: space)
        #expect(storage.defaultCredential(for: space) == user1)
        #expect(storage.credentials(for: space) == ["user1": user1])
        #expect(storage.defaultCredential(for: wrongSpace) == nil)
    }

    @Test("setDefaultCredential replaces the default a first set chose")
    func explicitDefaultWins() {
        let storage = URLCredentialStorage()
        storage.set(user2, for: space)
        storage.setDefaultCredential(user1, for: space)
        #expect(storage.defaultCredential(for: space) == user1)
    }

    @Test("Removing credentials, the default among them")
    func removal() {
        let storage = URLCredentialStorage()
        storage.set(user1, for: space)
        storage.remove(user1, for: space)
        #expect(storage.credentials(for: space) == nil)
        #expect(storage.allCredentials.isEmpty)

        storage.setDefaultCredential(user1, for: space)
        storage.set(user2, for: space)
        storage.remove(user1, for: space)
        #expect(storage.defaultCredential(for: space) == nil)
        #expect(storage.credentials(for: space)?.count == 1)

        storage.remove(URLCredential(user: "nobody", password: "x", persistence: .forSession), for: space)
        #expect(storage.credentials(for: space)?.count == 1)
    }

    @Test("A credential without persistence is neither stored nor made default")
    func nonePersistence() {
        let storage = URLCredentialStorage()
        storage.set(URLCredential(user: "user1", password: "password1", persistence: .none), for: space)
        #expect(storage.allCredentials.isEmpty)
        #expect(storage.defaultCredential(for: space) == nil)
    }
}
