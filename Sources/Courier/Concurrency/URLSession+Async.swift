import CourierHTTP
import Foundation
import NIOConcurrencyHelpers
import Synchronization

extension URLSession {
    /// Loads `request` and returns its body and response. Cancelling the Swift task cancels the URL task
    /// (`URLError(.cancelled)`).
    public func data(
        for request: URLRequest,
        delegate: (any URLSessionTaskDelegate)? = nil
    ) async throws -> (Data, URLResponse) {
        try await collect { mode in
            self.register(delegate: delegate) {
                URLSessionDataTask(session: self, request: request, identifier: $0, completionMode: mode)
            }
        }
    }

    /// Loads `url` with GET and returns its body and response.
    public func data(
        from url: URL,
        delegate: (any URLSessionTaskDelegate)? = nil
    ) async throws -> (Data, URLResponse) {
        try await data(for: URLRequest(url: url), delegate: delegate)
    }

    /// Uploads `bodyData` with `request` and returns the response body and response.
    public func upload(
        for request: URLRequest,
        from bodyData: Data,
        delegate: (any URLSessionTaskDelegate)? = nil
    ) async throws -> (Data, URLResponse) {
        try await collect { mode in
            self.makeUpload(request, body: .data(bodyData), mode: mode, delegate: delegate)
        }
    }

    /// Uploads the file at `fileURL` (streamed from disk) and returns the response body and response.
    public func upload(
        for request: URLRequest,
        fromFile fileURL: URL,
        delegate: (any URLSessionTaskDelegate)? = nil
    ) async throws -> (Data, URLResponse) {
        try await collect { mode in
            self.makeUpload(request, body: .file(fileURL), mode: mode, delegate: delegate)
        }
    }

    /// Runs the task `make` creates (with its delegate, if any) with a collecting completion mode; cancelling the
    /// Swift task cancels it.
    func collect(
        _ make: @escaping (TaskCompletionMode) -> URLSessionTask
    ) async throws -> (Data, URLResponse) {
        let box = TaskBox()
        return try await withTaskCancellationHandler {
            // Unchecked: the task's completion runs exactly once (`CompletionOnce`), and the checked kind costs every
            // call an object of its own.
            try await withUnsafeThrowingContinuation { continuation in
                let handler: TaskCompletionMode.CollectHandler = { result in
                    box.release()
                    continuation.resume(with: result)
                }
                let task = make(.collect(handler))
                box.set(task)
                task.resume()
            }
        } onCancel: {
            box.cancel()
        }
    }

    /// Starts loading `request` and returns as soon as the response head arrived, with the body as an async
    /// sequence of bytes.
    public func bytes(
        for request: URLRequest,
        delegate: (any URLSessionTaskDelegate)? = nil
    ) async throws -> (URLSession.AsyncBytes, URLResponse) {
        let source = AsyncBytesSource()
        let task = register(delegate: delegate) {
            URLSessionDataTask(session: self, request: request, identifier: $0, completionMode: .stream(source))
        }
        source.attach(task)
        task.resume()
        let response = try await source.response()
        return (AsyncBytes(task: task, source: source), response)
    }

    /// Starts a GET of `url` and returns its body as an async sequence of bytes.
    public func bytes(
        from url: URL,
        delegate: (any URLSessionTaskDelegate)? = nil
    ) async throws -> (URLSession.AsyncBytes, URLResponse) {
        try await bytes(for: URLRequest(url: url), delegate: delegate)
    }

    /// Downloads `request` to a file the caller owns (it is not deleted; move it where it belongs).
    public func download(
        for request: URLRequest,
        delegate: (any URLSessionTaskDelegate)? = nil
    ) async throws -> (URL, URLResponse) {
        try await collectDownload { mode in
            self.register(delegate: delegate) {
                URLSessionDownloadTask(session: self, request: request, identifier: $0, completionMode: mode)
            }
        }
    }

    /// Downloads `url` to a file the caller owns.
    public func download(
        from url: URL,
        delegate: (any URLSessionTaskDelegate)? = nil
    ) async throws -> (URL, URLResponse) {
        try await download(for: URLRequest(url: url), delegate: delegate)
    }

    /// Resumes a download from `resumeData` into a file the caller owns.
    public func download(
        resumeFrom resumeData: Data,
        delegate: (any URLSessionTaskDelegate)? = nil
    ) async throws -> (URL, URLResponse) {
        try await collectDownload { mode in
            self.makeResumedDownload(resumeData, mode: mode, delegate: delegate)
        }
    }

    private func collectDownload(
        _ make: @escaping (TaskCompletionMode) -> URLSessionTask
    ) async throws -> (URL, URLResponse) {
        let box = TaskBox()
        return try await withTaskCancellationHandler {
            // Unchecked, as in `collect`.
            try await withUnsafeThrowingContinuation { continuation in
                let handler: TaskCompletionMode.DownloadCollectHandler = { result in
                    box.release()
                    continuation.resume(with: result)
                }
                let task = make(.downloadCollect(handler))
                box.set(task)
                task.resume()
            }
        } onCancel: {
            box.cancel()
        }
    }
}

/// Holds the task of an async call so that the cancellation handler (which may run first) can reach it.
///
/// An inline `Mutex` rather than a lock object: the box is made and freed once per call, and a `NIOLockedValueBox`
/// (a lock object allocated, initialised and destroyed with it) made that cost about a microsecond.
final class TaskBox: Sendable {
    private struct State {
        var task: URLSessionTask?
        var cancelled = false
    }

    private let state = Mutex(State())

    func set(_ task: URLSessionTask) {
        let cancelled = state.withLock { state in
            state.task = task
            return state.cancelled
        }
        if cancelled { task.cancel() }
    }

    func cancel() {
        let task = state.withLock { state in
            state.cancelled = true
            return state.task
        }
        task?.cancel()
    }

    /// Lets go of the task when it completed, before the caller resumes: the task's last reference then goes on the
    /// thread that completed it, which frees it while the caller already runs its next request.
    func release() {
        state.withLock { $0.task = nil }
    }
}
