import Foundation

/// The lines of an asynchronous sequence of bytes, decoded as UTF-8, split as Darwin's `AsyncLineSequence` splits
/// them (the implementation Apple contributed to swift-corelibs-foundation): a line ends at LF, CR, CR LF, VT, FF,
/// NEL (U+0085), LINE SEPARATOR (U+2028) or PARAGRAPH SEPARATOR (U+2029); the terminator is not part of the line;
/// empty lines are skipped, so `"a\n\nb"` is the two lines `"a"` and `"b"`; a last line without a terminator is
/// returned too.
public struct AsyncLineSequence<Base: AsyncSequence & Sendable>: AsyncSequence, Sendable where Base.Element == UInt8 {
    /// A line.
    public typealias Element = String

    let base: Base

    /// Splits `base` (`AsyncBytes.lines` makes one for a body).
    package init(base: Base) {
        self.base = base
    }

    /// The iterator.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: Base.AsyncIterator
        var buffer: [UInt8] = []
        /// The byte read after a CR that is not its LF: it starts the next line.
        var pendingByte: UInt8?
        var ended = false

        /// The next line, or `nil` at the end.
        public mutating func next() async throws -> String? {
            while let byte = try await nextByte() {
                switch byte {
                case 0x0D:  // CR, with the LF of a CR LF
                    if let following = try await nextByte(), following != 0x0A { pendingByte = following }
                    if let line = takeLine() { return line }
                case 0x0A...0x0C:  // LF, VT, FF
                    if let line = takeLine() { return line }
                case 0xC2:  // NEL is C2 85; C2 followed by anything else is text
                    guard let second = try await nextByte() else {
                        buffer.append(byte)
                        break
                    }
                    guard second == 0x85 else {
                        buffer.append(contentsOf: [byte, second])
                        break
                    }
                    if let line = takeLine() { return line }
                case 0xE2:  // U+2028 and U+2029 are E2 80 A8 and E2 80 A9; other E2 sequences are text
                    guard let second = try await nextByte() else {
                        buffer.append(byte)
                        break
                    }
                    guard second == 0x80, let third = try await nextByte() else {
                        buffer.append(contentsOf: [byte, second])
                        break
                    }
                    guard third == 0xA8 || third == 0xA9 else {
                        buffer.append(contentsOf: [byte, second, third])
                        break
                    }
                    if let line = takeLine() { return line }
                default:
                    buffer.append(byte)
                }
            }
            return takeLine()
        }

        private mutating func nextByte() async throws -> UInt8? {
            if let pending = pendingByte {
                pendingByte = nil
                return pending
            }
            guard !ended else { return nil }
            guard let byte = try await base.next() else {
                ended = true
                return nil
            }
            return byte
        }

        /// The buffered line, or `nil` when it is empty (an empty line is skipped, as on Darwin).
        private mutating func takeLine() -> String? {
            guard !buffer.isEmpty else { return nil }
            defer { buffer.removeAll(keepingCapacity: true) }
            return String(decoding: buffer, as: UTF8.self)
        }
    }

    /// Makes the iterator.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeAsyncIterator())
    }
}
