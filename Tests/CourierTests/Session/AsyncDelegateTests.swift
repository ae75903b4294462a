import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

/// A delegate written with the async forms only, as Darwin code may be.
final class AsyncOnlyDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    let disposition: URLSession.ResponseDisposition
    let followRedirects: Bool
    let recorder = RecordingDelegate()
    let asked = NIOLockedValueBox<[String]>([])

    init(disposition: URLSession.ResponseDisposition, followRedirects: Bool) {
        self.disposition = disposition
        self.followRedirects = followRedirects
    }

    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse
    ) async -> URLSession.ResponseDisposition {
        asked.withLockedValue { $0.append("response") }
        return disposition
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest
    ) async -> URLRequest? {
        asked.withLockedValue { $0.append("redirect") }
        return followRedirects ? request : nil
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        recorder.urlSession(session, dataTask: dataTask, didReceive: data)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        recorder.urlSession(session, task: task, didCompleteWithError: error)
    }
}

@Suite("Async forms of delegate methods")
struct AsyncDelegateTests {
    @Test func anAsyncResponseDecisionIsHonoured() async throws {
        try await withServer { server in
            server.route("/r", response: .ok("body"))
            let delegate = AsyncOnlyDelegate(disposition: .cancel, followRedirects: true)
            let session = makeSession(delegate: delegate)
            session.dataTask(with: server.url("/r")).resume()
            await delegate.recorder.waitForCompletions()
            #expect(delegate.asked.withLockedValue { $0 } == ["response"])
            #expect(delegate.recorder.events.last == .complete(.cancelled))
            #expect(delegate.recorder.dataBytes == 0)
        }
    }

    @Test func anAsyncRedirectDecisionIsHonoured() async throws {
        try await withServer { server in
            server.route("/old", response: MockResponse(status: 302, headers: [("Location", "/new")]))
            server.route("/new", response: .ok("moved"))
            let delegate = AsyncOnlyDelegate(disposition: .allow, followRedirects: false)
            let session = makeSession(delegate: delegate)
            let task = session.dataTask(with: server.url("/old"))
            task.resume()
            await delegate.recorder.waitForCompletions()
            #expect(delegate.asked.withLockedValue { $0 } == ["redirect", "response"])
            #expect((task.response as? HTTPURLResponse)?.statusCode == 302)
            #expect(server.requests(path: "/new").isEmpty)
        }
    }
}
