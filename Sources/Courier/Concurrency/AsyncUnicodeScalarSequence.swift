/// The Unicode scalars of an asynchronous sequence of UTF-8 bytes, as Darwin's `AsyncUnicodeScalarSequence`.
///
/// Invalid UTF-8 is not an error: each maximal invalid subsequence becomes one U+FFFD, exactly as
/// `String(decoding:as: UTF8.self)` decodes the same bytes, however the bytes are split across reads.
public struct AsyncUnicodeScalarSequence<Base: AsyncSequence & Sendable>: AsyncSequence, Sendable
where Base.Element == UInt8 {
    /// A Unicode scalar.
    public typealias Element = Unicode.Scalar

    let base: Base

    /// Decodes `base` (`AsyncBytes.unicodeScalars` makes one for a body).
    package init(base: Base) {
        self.base = base
    }

    /// The iterator.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: Base.AsyncIterator
        /// A byte read past an invalid sequence: it starts the next scalar.
        var pendingByte: UInt8?

        /// The next scalar, or `nil` at the end.
        public mutating func next() async throws -> Unicode.Scalar? {
            guard let lead = try await nextByte() else { return nil }
            guard let shape = Self.shape(ofLead: lead) else {
                return lead < 0x80 ? Unicode.Scalar(lead) : Self.replacement
            }
            var value = UInt32(lead) & shape.leadMask
            for index in 0..<shape.continuations {
                guard let byte = try await nextByte() else { return Self.replacement }
                let range = index == 0 ? shape.secondByte : 0x80...0xBF
                guard range.contains(byte) else {
                    // The byte is not part of this sequence: it starts the next one.
                    pendingByte = byte
                    return Self.replacement
                }
                value = value << 6 | UInt32(byte & 0x3F)
            }
            return Unicode.Scalar(value) ?? Self.replacement
        }

        private mutating func nextByte() async throws -> UInt8? {
            if let byte = pendingByte {
                pendingByte = nil
                return byte
            }
            return try await base.next()
        }

        private static var replacement: Unicode.Scalar { Unicode.Scalar(0xFFFD)! }

        /// How a multi-byte sequence starting with `lead` goes on (Unicode Table 3-7, which rules out overlong
        /// forms, surrogates and values above U+10FFFF through the second byte's range); `nil` for ASCII and bytes
        /// that cannot start a sequence.
        private static func shape(
            ofLead lead: UInt8
        ) -> (continuations: Int, leadMask: UInt32, secondByte: ClosedRange<UInt8>)? {
            switch lead {
            case 0xC2...0xDF: return (1, 0x1F, 0x80...0xBF)
            case 0xE0: return (2, 0x0F, 0xA0...0xBF)
            case 0xED: return (2, 0x0F, 0x80...0x9F)
            case 0xE1...0xEF: return (2, 0x0F, 0x80...0xBF)
            case 0xF0: return (3, 0x07, 0x90...0xBF)
            case 0xF4: return (3, 0x07, 0x80...0x8F)
            case 0xF1...0xF3: return (3, 0x07, 0x80...0xBF)
            default: return nil
            }
        }
    }

    /// Makes the iterator.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeAsyncIterator())
    }
}
