import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

@testable import Courier

/// Follow-up requests (redirects) over loopback: the body of the response being left is drained so that its
/// connection serves the next request, instead of being closed (the old engine cancelled it).
@Suite("Follow-ups reuse the connection")
struct FollowUpConnectionTests {
    /// A redirect whose body trickles in after the head, so that it is still unread when the follow-up starts.
    private func redirect(to path: String, bodyBytes: Int) -> MockResponse {
        var response = MockResponse(
            status: 302,
            headers: [("Location", path)],
            body: .data(Data(repeating: 0x2E, count: bodyBytes))
        )
        response.chunkSize = 500
        response.chunkDelay = .milliseconds(10)
        return response
    }

    /// A redirect to the same host, with a body, is followed on the same connection — also when the delegate
    /// decides (the source is paused while it does, and the old engine then closed the connection).
    @Test(arguments: [false, true])
    func aRedirectToTheSameHostReusesTheConnection(askTheDelegate: Bool) async throws {
        try await withServer { server in
            server.route("/from", response: redirect(to: "/to", bodyBytes: 2_000))
            server.route("/to", response: .ok("arrived"))
            let delegate = askTheDelegate ? RecordingDelegate() : nil
            let outcome = await makeSession(delegate: delegate).runDataTask(server.url("/from"))
            #expect(outcome.error == nil)
            #expect(outcome.data == Data("arrived".utf8))
            #expect(server.requests(path: "/to").count == 1)
            #expect(server.connectionCount == 1)
            if let delegate { #expect(delegate.events.contains(.redirect("/to"))) }
        }
    }

    /// A redirect body larger than the drain limit is not read: its connection is closed and the follow-up gets
    /// a new one.
    @Test func aHugeRedirectBodyIsNotDrained() async throws {
        try await withServer { server in
            var huge = redirect(to: "/to", bodyBytes: 4 * 1024 * 1024)
            huge.chunkSize = 256 * 1024
            server.route("/from", response: huge)
            server.route("/to", response: .ok("arrived"))
            let delegate = RecordingDelegate()
            let outcome = await makeSession(delegate: delegate).runDataTask(server.url("/from"))
            #expect(outcome.data == Data("arrived".utf8))
            #expect(server.connectionCount == 2)
        }
    }

    /// Nothing keeps a finished task's engine alive (the exchange holds the engine's consumer: a cycle through the
    /// source leaked every request's engine and body).
    @Test func aFinishedTaskReleasesItsEngine() async throws {
        try await withServer { server in
            server.route("/bye", response: .ok("bye"))
            let session = makeSession()
            let done = AsyncFlag()
            let task = session.dataTask(with: server.url("/bye")) { _, _, _ in done.set() }
            task.resume()
            weak let engine = task.mutable.withLock { $0.engine }
            #expect(engine != nil)
            await done.wait()
            try await waitUntil { engine == nil }
            #expect(engine == nil)
        }
    }

    /// The cookies a redirect response sets are stored before the redirect is followed, so the follow-up carries
    /// them (a login's `302` and its session cookie), with or without a delegate deciding.
    @Test(arguments: [false, true])
    func aRedirectsCookiesGoWithTheFollowUp(askTheDelegate: Bool) async throws {
        try await withServer { server in
            server.route(
                "/login",
                response: MockResponse(status: 302, headers: [("Location", "/home"), ("Set-Cookie", "sid=42")]))
            server.route("/home", response: .ok("welcome"))
            let delegate = askTheDelegate ? RecordingDelegate() : nil
            let outcome = await makeSession(delegate: delegate).runDataTask(server.url("/login"))
            #expect(outcome.data == Data("welcome".utf8))
            #expect(server.requests(path: "/home").first?.header("Cookie") == "sid=42")
        }
    }
}
