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

extension URLSessionStreamDelegate {
    public func urlSession(_ session: URLSession, readClosedFor streamTask: URLSessionStreamTask) {}
    public func urlSession(_ session: URLSession, writeClosedFor streamTask: URLSessionStreamTask) {}
    public func urlSession(_ session: URLSession, betterRouteDiscoveredFor streamTask: URLSessionStreamTask) {}
    public func urlSession(
        _ session: URLSession,
        streamTask: URLSessionStreamTask,
        didBecome inputStream: InputStream,
        outputStream: OutputStream
    ) {}
}
