/// An error that a task reports to the app exactly as it was raised, while the engine works with the
/// ``TransferError`` that carries it: a custom `URLProtocol`'s failure, which Darwin hands to the completion
/// handler, the delegate and `URLSessionTask.error` unchanged (the app's own error type, its user info).
///
/// Equal only to itself, so that a ``TransferError`` stays `Hashable` without asking anything of the app's type.
public final class ReportedError: Hashable, Sendable {
    /// The error as it was raised.
    public let error: any Error

    /// Wraps `error`.
    public init(_ error: any Error) {
        self.error = error
    }

    public static func == (lhs: ReportedError, rhs: ReportedError) -> Bool { lhs === rhs }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(self))
    }
}
