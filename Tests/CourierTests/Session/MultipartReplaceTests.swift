import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

/// Records each response (with its part fields) and the data after it, per part.
private final class PartsDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    struct Part: Equatable {
        var contentType: String?
        var index: String?
        var body = Data()
    }

    let parts = NIOLockedValueBox<[Part]>([])
    let error = NIOLockedValueBox<URLError?>(nil)
    let done = AsyncGate()
    /// Cancel when asked about this part (0-based), if set.
    let cancelAt: Int?

    init(cancelAt: Int? = nil) { self.cancelAt = cancelAt }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        let http = response as? HTTPURLResponse
        let count = parts.withLockedValue { parts in
            parts.append(
                Part(
                    contentType: http?.value(forHTTPHeaderField: "Content-Type"),
                    index: http?.value(forHTTPHeaderField: "X-Index")))
            return parts.count
        }
        completionHandler(count - 1 == cancelAt ? .cancel : .allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        parts.withLockedValue { parts in
            if parts.isEmpty { parts.append(Part()) }
            parts[parts.count - 1].body.append(data)
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        self.error.withLockedValue { $0 = error as? URLError }
        done.open()
    }
}

/// Cancels the task while it decides about the first part — after the body has ended — and only then allows the
/// part.
private final class CancelWhileDecidingDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    let error = NIOLockedValueBox<URLError?>(nil)
    let completions = NIOLockedValueBox(0)
    let done = AsyncGate()

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        // Time for the rest of the (small, one-read) body and its end to arrive while the part waits.
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(300)) {
            dataTask.cancel()
            completionHandler(.allow)
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        self.error.withLockedValue { $0 = error as? URLError }
        completions.withLockedValue { $0 += 1 }
        done.open()
    }
}

@Suite("multipart/x-mixed-replace")
struct MultipartReplaceTests {
    /// A body of `count` parts, each `text/plain` with its index.
    private func body(parts count: Int) -> String {
        (0..<count).map { "--frame\r\nContent-Type: text/plain\r\nX-Index: \($0)\r\n\r\npart \($0)\r\n" }.joined()
            + "--frame--\r\n"
    }

    private func route(_ server: MockServer, _ path: String, parts: Int, chunkSize: Int = 16 * 1024) {
        var response = MockResponse(
            headers: [("Content-Type", "multipart/x-mixed-replace; boundary=frame")],
            body: .data(Data(body(parts: parts).utf8)))
        response.chunked = true
        response.chunkSize = chunkSize
        server.route(path, response: response)
    }

    @Test(arguments: [1, 100])
    func eachPartIsAResponseOfItsOwn(parts count: Int) async throws {
        try await withServer { server in
            // Small chunks: heads, bodies and delimiters split across reads.
            route(server, "/push", parts: count, chunkSize: 7)
            let delegate = PartsDelegate()
            let session = makeSession(delegate: delegate)
            defer { session.finishTasksAndInvalidate() }
            session.dataTask(with: server.url("/push")).resume()
            await delegate.done.wait()
            #expect(delegate.error.withLockedValue { $0 } == nil)
            let parts = delegate.parts.withLockedValue { $0 }
            #expect(
                parts
                    == (0..<count).map {
                        PartsDelegate.Part(contentType: "text/plain", index: "\($0)", body: Data("part \($0)".utf8))
                    })
        }
    }

    /// A part that announces no body after one that did: the task's `Progress` goes from a known total to 0.
    /// Foundation on Linux traps when a `Progress`'s total goes from a positive count straight to 0; before, the
    /// process crashed as the second part arrived.
    @Test func anEmptyPartAfterOneWithABodyKeepsTheTasksProgress() async throws {
        try await withServer { server in
            let body =
                "--frame\r\nContent-Type: text/plain\r\nContent-Length: 6\r\nX-Index: 0\r\n\r\npart 0\r\n"
                + "--frame\r\nContent-Type: text/plain\r\nContent-Length: 0\r\nX-Index: 1\r\n\r\n\r\n--frame--\r\n"
            server.route(
                "/push-empty",
                response: MockResponse(
                    headers: [("Content-Type", "multipart/x-mixed-replace; boundary=frame")],
                    body: .data(Data(body.utf8))))
            let delegate = PartsDelegate()
            let session = makeSession(delegate: delegate)
            defer { session.finishTasksAndInvalidate() }
            let task = session.dataTask(with: server.url("/push-empty"))
            let progress = task.progress
            task.resume()
            await delegate.done.wait()
            #expect(delegate.error.withLockedValue { $0 } == nil)
            #expect(delegate.parts.withLockedValue { $0.map(\.index) } == ["0", "1"])
            #expect(progress.fractionCompleted == 1)
        }
    }

    @Test func cancellingAtAPartEndsTheTask() async throws {
        try await withServer { server in
            route(server, "/push-cancel", parts: 10)
            let delegate = PartsDelegate(cancelAt: 3)
            let session = makeSession(delegate: delegate)
            defer { session.finishTasksAndInvalidate() }
            session.dataTask(with: server.url("/push-cancel")).resume()
            await delegate.done.wait()
            #expect(delegate.error.withLockedValue { $0?.code } == .cancelled)
            #expect(delegate.parts.withLockedValue { $0.count } == 4)
        }
    }

    /// The body's end reaches the task while the app still decides about a part: `cancel()` then ends the task as
    /// cancelled, as it would a moment earlier, rather than being ignored until the part is allowed.
    @Test func cancellingWhileAPartWaitsAfterTheBodyEndedEndsTheTask() async throws {
        try await withServer { server in
            server.route(
                "/push-ended",
                response: MockResponse(
                    headers: [("Content-Type", "multipart/x-mixed-replace; boundary=frame")],
                    body: .data(Data(body(parts: 1).utf8))))
            let delegate = CancelWhileDecidingDelegate()
            let session = makeSession(delegate: delegate)
            defer { session.finishTasksAndInvalidate() }
            session.dataTask(with: server.url("/push-ended")).resume()
            await delegate.done.wait()
            #expect(delegate.error.withLockedValue { $0?.code } == .cancelled)
            try await Task.sleep(for: .milliseconds(100))
            #expect(delegate.completions.withLockedValue { $0 } == 1)
        }
    }

    @Test func aCompletionHandlerGetsTheLastPart() async throws {
        try await withServer { server in
            route(server, "/push-last", parts: 5, chunkSize: 11)
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            let outcome = await session.runDataTask(server.url("/push-last"))
            #expect(outcome.error == nil)
            #expect(outcome.data == Data("part 4".utf8))
            #expect(outcome.http?.value(forHTTPHeaderField: "X-Index") == "4")
        }
    }

    @Test func aDownloadKeepsTheBodyWhole() async throws {
        try await withServer { server in
            route(server, "/push-download", parts: 3)
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            let (file, _) = try await session.download(from: server.url("/push-download"))
            defer { try? FileManager.default.removeItem(at: file) }
            #expect(try Data(contentsOf: file) == Data(body(parts: 3).utf8))
        }
    }
}
