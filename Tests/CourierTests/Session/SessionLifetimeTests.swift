import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

/// A session that ran a request and was invalidated is freed: an app (or a server) that makes a session per job
/// must not grow with the sessions it made.
@Suite("Session lifetime")
struct SessionLifetimeTests {
    @Test func anInvalidatedSessionThatRanARequestIsFreed() async throws {
        try await withServer(.http) { server in
            server.route("/hello", response: .ok("hello"))
            weak var released: URLSession?
            do {
                let session = URLSession(configuration: .ephemeral)
                released = session
                let (data, _) = try await session.data(from: server.url("/hello"))
                #expect(data == Data("hello".utf8))
                session.finishTasksAndInvalidate()
            }
            // Invalidation completes asynchronously (the delegate queue hears it last): give it the time it needs.
            let deadline = Date().addingTimeInterval(10)
            while released != nil, Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
            #expect(released == nil)
        }
    }
}
