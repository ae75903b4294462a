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

        /// The iterator.
        public struct AsyncIterator: AsyncIteratorProtocol {
            let source: AsyncBytesSource
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
            AsyncIterator(source: source)
        }

        /// The body split into lines (at `\n`, `\r` or `\r\n`), decoded as UTF-8.
        public var lines: AsyncLineSequence<AsyncBytes> {
            AsyncLineSequence(base: self)
        }
    }
}
