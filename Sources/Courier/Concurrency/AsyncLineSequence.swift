import Foundation

/// The lines of an asynchronous sequence of bytes, decoded as UTF-8. A line ends at `\n`, `\r` or `\r\n`; the
/// terminator is not part of the line; a last line without a terminator is returned too.
public struct AsyncLineSequence<Base: AsyncSequence & Sendable>: AsyncSequence, Sendable where Base.Element == UInt8 {
    /// A line.
    public typealias Element = String

    let base: Base

    /// The iterator.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: Base.AsyncIterator
        var buffer: [UInt8] = []
        var pendingByte: UInt8?
        var ended = false

        /// The next line, or `nil` at the end.
        public mutating func next() async throws -> String? {
            guard !ended else { return nil }
            buffer.removeAll(keepingCapacity: true)
            while true {
                let byte: UInt8?
                if let pending = pendingByte {
                    byte = pending
                    pendingByte = nil
                } else {
                    byte = try await base.next()
                }
                guard let byte else {
                    ended = true
                    return buffer.isEmpty ? nil : String(decoding: buffer, as: UTF8.self)
                }
                switch byte {
                case UInt8(ascii: "\n"):
                    return String(decoding: buffer, as: UTF8.self)
                case UInt8(ascii: "\r"):
                    if let following = try await base.next(), following != UInt8(ascii: "\n") {
                        pendingByte = following
                    }
                    return String(decoding: buffer, as: UTF8.self)
                default:
                    buffer.append(byte)
                }
            }
        }
    }

    /// Makes the iterator.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeAsyncIterator())
    }
}
