import Foundation
import Testing

@testable import Courier

/// The process's shared stores are made only when something asks for them. Each check runs in a child process of
/// its own, where nothing has made them yet.
@Suite("Shared stores made on demand")
struct SharedStoreUseTests {
    /// An ephemeral configuration, and a session made with it that runs a task, make none of the shared stores.
    /// Before, `ephemeral` started from the default settings, which made all three (reading the user's cookie jar,
    /// credential file and FoundationNetworking's cookies) only to replace them.
    @Test func anEphemeralSessionMakesNoSharedStore() async {
        await #expect(processExitsWith: .success) {
            let session = URLSession(configuration: .ephemeral)
            let (data, _) = try await session.data(from: URL(string: "data:,hello")!)
            session.finishTasksAndInvalidate()
            guard data == Data("hello".utf8), SharedStoreUse.stores.isEmpty else { exit(1) }
        }
    }

    /// A background configuration uses the shared cookie and credential storages, as on Darwin, but has no cache:
    /// it does not make `URLCache.shared` either.
    @Test func aBackgroundConfigurationMakesNoCache() async {
        await #expect(processExitsWith: .success) {
            let configuration = URLSessionConfiguration.background(withIdentifier: "shared-store-use")
            guard configuration.urlCache == nil, configuration.httpCookieStorage === HTTPCookieStorage.shared,
                configuration.urlCredentialStorage === URLCredentialStorage.shared,
                SharedStoreUse.stores == [.cookies, .credentials]
            else { exit(1) }
        }
    }

    /// The default configuration holds all three (the record itself is checked here).
    @Test func theDefaultConfigurationHoldsAllThree() async {
        await #expect(processExitsWith: .success) {
            let configuration = URLSessionConfiguration.default
            guard configuration.urlCache === URLCache.shared,
                configuration.httpCookieStorage === HTTPCookieStorage.shared,
                configuration.urlCredentialStorage === URLCredentialStorage.shared,
                SharedStoreUse.stores == [.cookies, .credentials, .cache]
            else { exit(1) }
        }
    }
}
