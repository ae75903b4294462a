import Foundation

/// Events of stream tasks.
public protocol URLSessionStreamDelegate: URLSessionTaskDelegate {
    /// The read side of the connection closed.
    func urlSession(_ session: URLSession, readClosedFor streamTask: URLSessionStreamTask)
    /// The write side of the connection closed.
    func urlSession(_ session: URLSession, writeClosedFor streamTask: URLSessionStreamTask)
    /// A better route to the host was found.
    func urlSession(_ session: URLSession, betterRouteDiscoveredFor streamTask: URLSessionStreamTask)
    /// The stream task was turned into a pair of streams by `captureStreams()`.
    func urlSession(
        _ session: URLSession,
        streamTask: URLSessionStreamTask,
        didBecome inputStream: InputStream,
        outputStream: OutputStream
    )
}

/// A task's own delegate that lacks a method hands the event to the session's delegate, as on Darwin (see
/// `URLSessionTask.sessionFallback(from:as:)`): captured streams a task delegate cannot take reach the session's.
extension URLSessionStreamDelegate {
    public func urlSession(_ session: URLSession, readClosedFor streamTask: URLSessionStreamTask) {
        streamTask.sessionFallback(from: self, as: URLSessionStreamDelegate.self)?.urlSession(
            session, readClosedFor: streamTask)
    }
    public func urlSession(_ session: URLSession, writeClosedFor streamTask: URLSessionStreamTask) {
        streamTask.sessionFallback(from: self, as: URLSessionStreamDelegate.self)?.urlSession(
            session, writeClosedFor: streamTask)
    }
    public func urlSession(_ session: URLSession, betterRouteDiscoveredFor streamTask: URLSessionStreamTask) {
        streamTask.sessionFallback(from: self, as: URLSessionStreamDelegate.self)?.urlSession(
            session, betterRouteDiscoveredFor: streamTask)
    }
    public func urlSession(
        _ session: URLSession,
        streamTask: URLSessionStreamTask,
        didBecome inputStream: InputStream,
        outputStream: OutputStream
    ) {
        streamTask.sessionFallback(from: self, as: URLSessionStreamDelegate.self)?.urlSession(
            session, streamTask: streamTask, didBecome: inputStream, outputStream: outputStream)
    }
}
