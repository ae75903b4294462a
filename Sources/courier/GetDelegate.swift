import Courier
import Foundation
import NIOConcurrencyHelpers

/// Streams a data task's body into an ``OutputSink`` and reports the outcome.
final class GetDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private let sink: OutputSink
    private let includeHeaders: Bool
    private let state = NIOLockedValueBox<
        (continuation: CheckedContinuation<Result<Int, URLError>, Never>?, status: Int, writeError: (any Error)?)
    >((nil, 0, nil))

    init(sink: OutputSink, includeHeaders: Bool) {
        self.sink = sink
        self.includeHeaders = includeHeaders
    }

    /// Runs `task` and returns the status code, or the error.
    func run(_ task: URLSessionDataTask) async -> Result<Int, URLError> {
        await withCheckedContinuation { continuation in
            state.withLockedValue { $0.continuation = continuation }
            task.resume()
        }
    }

    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        let http = response as? HTTPURLResponse
        state.withLockedValue { $0.status = http?.statusCode ?? 0 }
        if includeHeaders, let http {
            var head = "HTTP/1.1 \(http.statusCode)\r\n"
            for (name, value) in http.allHeaderFields {
                head += "\(name): \(value)\r\n"
            }
            head += "\r\n"
            write(Data(head.utf8), cancelling: dataTask)
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        write(data, cancelling: dataTask)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let (continuation, status, writeError) = state.withLockedValue { state in
            defer { state.continuation = nil }
            return (state.continuation, state.status, state.writeError)
        }
        if let writeError {
            continuation?.resume(
                returning: .failure(
                    URLError(.cannotWriteToFile, userInfo: [NSLocalizedDescriptionKey: "\(writeError)"]))
            )
        } else if let error {
            continuation?.resume(returning: .failure(error as? URLError ?? URLError(.unknown)))
        } else {
            continuation?.resume(returning: .success(status))
        }
    }

    private func write(_ data: Data, cancelling task: URLSessionTask) {
        do {
            try sink.write(data)
        } catch {
            state.withLockedValue { $0.writeError = error }
            task.cancel()
        }
    }
}
