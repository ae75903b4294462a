/// Errors thrown by ``MockServer``.
public enum MockServerError: Error, Sendable, Equatable {
    /// ``MockServer/start()`` was called on a server that was already started or shut down.
    case alreadyStarted
    /// A connection arrived after ``MockServer/shutdown()``.
    case shutDown
}
