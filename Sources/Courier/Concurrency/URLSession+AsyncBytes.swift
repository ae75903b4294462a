import Foundation

extension URLSession {
    /// The body of a response as an asynchronous sequence of bytes, read with backpressure: the transfer pauses
    /// while the reader is behind.
    public struct AsyncBytes: AsyncSequence, Sendable {
        /// A byte.
        public typealias Element = UInt8

        /// The data task that delivers the bytes.
        public let task: URLSessionDataTask
        let source: AsyncBytesSource
        /// Shared by every copy and iterator: when the last one goes, an unfinished task is cancelled, so a body
        /// nobody reads does not hold its connection (paused by backpressure) forever.
        let lifetime: AsyncBytesLifetime

        init(task: URLSessionDataTask, source: AsyncBytesSource) {
            self.task = task
            self.source = source
            self.lifetime = AsyncBytesLifetime(task: task)
        }

        /// The iterator.
        public struct AsyncIterator: AsyncIteratorProtocol {
            let source: AsyncBytesSource
            let lifetime: AsyncBytesLifetime
            var chunk = Data()
            var index = 0
            var ended = false

            /// The next byte, or `nil` at the end of the body.
            public mutating func next() async throws -> UInt8? {
                while index >= chunk.count {
                    if ended { return nil }
                    guard let nextChunk = try await source.next() else {
                        ended = true
                        return nil
                    }
                    chunk = nextChunk
                    index = chunk.startIndex
                }
                defer { index += 1 }
                return chunk[index]
            }
        }

        /// Makes the iterator.
        public func makeAsyncIterator() -> AsyncIterator {
            AsyncIterator(source: source, lifetime: lifetime)
        }

        /// The body split into lines (at `\n`, `\r` or `\r\n`), decoded as UTF-8.
        public var lines: AsyncLineSequence<AsyncBytes> {
            AsyncLineSequence(base: self)
        }

        /// The body's Unicode scalars, decoded as UTF-8 (invalid bytes become U+FFFD).
        public var unicodeScalars: AsyncUnicodeScalarSequence<AsyncBytes> {
            AsyncUnicodeScalarSequence(base: self)
        }

        /// The body's characters, decoded as UTF-8 (invalid bytes become U+FFFD).
        public var characters: AsyncCharacterSequence<AsyncBytes> {
            AsyncCharacterSequence(base: self)
        }
    }
}

/// Cancels the task of an `AsyncBytes` that was dropped before its body was read to the end.
final class AsyncBytesLifetime: Sendable {
    let task: URLSessionDataTask

    init(task: URLSessionDataTask) {
        self.task = task
    }

    deinit {
        if task.state != .completed { task.cancel() }
    }
}
