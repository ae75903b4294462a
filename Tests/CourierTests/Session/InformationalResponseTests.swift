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
