import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

/// Records informational responses and the final one, in order, and whether they came on the delegate queue.
private final class InformationalDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    let events = NIOLockedValueBox<[String]>([])
    let links = NIOLockedValueBox<[String]>([])
    let done = AsyncGate()

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceiveInformationalResponse response: HTTPURLResponse
    ) {
        let onQueue = OperationQueue.current === session.delegateQueue
        events.withLockedValue { $0.append("informational \(response.statusCode) queue=\(onQueue)") }
        if let link = response.value(forHTTPHeaderField: "Link") { links.withLockedValue { $0.append(link) } }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        events.withLockedValue { $0.append("response \((response as? HTTPURLResponse)?.statusCode ?? 0)") }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        events.withLockedValue { $0.append("complete \(error == nil)") }
        done.open()
    }
}

@Suite("Informational responses")
struct InformationalResponseTests {
    @Test func earlyHintsReachTheDelegateBeforeTheResponseAnd100DoesNot() async throws {
        try await withServer { server in
            var response = MockResponse.ok("final")
            response.informational = [
                (100, []),
                (103, [("Link", "</style.css>; rel=preload")]),
                (103, [("Link", "</app.js>; rel=preload")]),
            ]
            response.headDelay = .milliseconds(20)
            server.route("/hints", response: response)
            let delegate = InformationalDelegate()
            let session = makeSession(delegate: delegate)
            defer { session.finishTasksAndInvalidate() }
            session.dataTask(with: server.url("/hints")).resume()
            await delegate.done.wait()
            #expect(
                delegate.events.withLockedValue { $0 } == [
                    "informational 103 queue=true", "informational 103 queue=true", "response 200", "complete true",
                ])
            #expect(delegate.links.withLockedValue { $0 } == ["</style.css>; rel=preload", "</app.js>; rel=preload"])
        }
    }

    /// A reused keep-alive connection that closes after a `103`: the server answered the request, so this is no
    /// stale connection and the request is not sent again on a new one. Before, the close before the final head
    /// counted as a stale connection, the GET went out a second time, and the app saw the server's `103` twice.
    @Test func aConnectionClosedAfterEarlyHintsIsNotRetried() async throws {
        try await withServer { server in
            server.route("/first", response: .ok("one"))
            server.route(
                "/hints-then-close", response: .raw("HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"))
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            // Leaves a keep-alive connection in the pool, which the next request reuses.
            let first = await session.runDataTask(server.url("/first"))
            #expect(first.http?.statusCode == 200)
            let delegate = InformationalDelegate()
            let task = session.dataTask(with: server.url("/hints-then-close"))
            task.delegate = delegate
            task.resume()
            await delegate.done.wait()
            #expect(delegate.events.withLockedValue { $0 } == ["informational 103 queue=true", "complete false"])
            #expect((task.error as? URLError)?.code == .networkConnectionLost)
            #expect(server.requests(path: "/hints-then-close").count == 1)
            #expect(server.connectionCount == 1)
        }
    }

    /// A server that sends informational responses without end never gets to keep the task: each one restarted the
    /// request timeout, so `102 Processing` for ever kept it alive until its resource timeout (a week by default).
    /// Past the limit the task fails with `badServerResponse`; a response at the limit still arrives.
    @Test(arguments: [100, 101])
    func endlessInformationalResponsesFailTheTask(count: Int) async throws {
        try await withServer { server in
            var response = MockResponse.ok("final")
            response.informational = Array(repeating: (status: 102, headers: []), count: count)
            server.route("/processing", response: response)
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            let outcome = await session.runDataTask(server.url("/processing"))
            if count <= 100 {
                #expect(outcome.http?.statusCode == 200)
                #expect(outcome.data == Data("final".utf8))
            } else {
                #expect(outcome.urlError?.code == .badServerResponse)
                #expect(outcome.urlError?.localizedDescription.contains("informational") == true)
            }
        }
    }

    @Test func aCompletionHandlerTaskIgnoresThemAndGetsTheFinalResponse() async throws {
        try await withServer { server in
            var response = MockResponse.ok("final")
            response.informational = [(103, [("Link", "</a.css>; rel=preload")])]
            server.route("/hints-plain", response: response)
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            let outcome = await session.runDataTask(server.url("/hints-plain"))
            #expect(outcome.http?.statusCode == 200)
            #expect(outcome.data == Data("final".utf8))
        }
    }
}
