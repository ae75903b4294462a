import Foundation

/// Holds a request body stream so that `URLRequest` can stay `Sendable` and `Hashable`.
///
/// `InputStream` is neither; a stream is compared and hashed by identity. Reading the stream is the job of a single
/// task at a time, so sharing the reference across concurrency domains is safe in practice.
final class InputStreamBox: Hashable, @unchecked Sendable {
    /// The wrapped stream.
    let stream: InputStream

    /// Wraps a stream.
    init(_ stream: InputStream) {
        self.stream = stream
    }

    static func == (lhs: InputStreamBox, rhs: InputStreamBox) -> Bool {
        lhs.stream === rhs.stream
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(stream))
    }
}
