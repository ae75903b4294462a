import Foundation

/// A task over a raw TCP (optionally TLS) connection.
///
/// - Note: Not implemented yet: a resumed stream task completes with `URLError(.unsupportedURL)`, and reads and
///   writes fail with the same error.
open class URLSessionStreamTask: URLSessionTask, @unchecked Sendable {
    let hostName: String
    let port: Int

    init(session: URLSession, hostName: String, port: Int, identifier: Int) {
        self.hostName = hostName
        self.port = port
        var components = URLComponents()
        components.scheme = "tcp"
        components.host = hostName
        components.port = port
        let url = components.url ?? URL(fileURLWithPath: "/")
        super.init(session: session, request: URLRequest(url: url), identifier: identifier, completionMode: .delegate)
    }

    private var unsupportedError: URLError {
        URLError(.unsupportedURL, userInfo: [NSLocalizedDescriptionKey: unsupportedReason ?? ""])
    }

    /// Reads between `minBytes` and `maxBytes` bytes.
    open func readData(
        ofMinLength minBytes: Int,
        maxLength maxBytes: Int,
        timeout: TimeInterval,
        completionHandler: @escaping @Sendable (Data?, Bool, (any Error)?) -> Void
    ) {
        let error = unsupportedError
        session.dispatcher.async { completionHandler(nil, false, error) }
    }

    /// Writes `data`.
    open func write(_ data: Data, timeout: TimeInterval, completionHandler: @escaping @Sendable ((any Error)?) -> Void)
    {
        let error = unsupportedError
        session.dispatcher.async { completionHandler(error) }
    }

    /// Hands the connection over as a pair of streams.
    open func captureStreams() {}
    /// Closes the write side.
    open func closeWrite() {}
    /// Closes the read side.
    open func closeRead() {}
    /// Starts TLS on the connection.
    open func startSecureConnection() {}
    /// Stops TLS on the connection.
    open func stopSecureConnection() {}

    override var unsupportedReason: String? { "stream tasks are not supported yet (a later Courier release)" }
}
