/// The characters (extended grapheme clusters) of an asynchronous sequence of UTF-8 bytes, as Darwin's
/// `AsyncCharacterSequence`; invalid UTF-8 decodes to U+FFFD as in ``AsyncUnicodeScalarSequence``.
///
/// A character is returned once the next one has begun (or the bytes ended): until then, a later scalar — a
/// combining mark, a zero-width joiner, the `\n` after a `\r` — could still belong to it.
public struct AsyncCharacterSequence<Base: AsyncSequence & Sendable>: AsyncSequence, Sendable
where Base.Element == UInt8 {
    /// A character.
    public typealias Element = Character

    let base: Base

    /// Decodes `base` (`AsyncBytes.characters` makes one for a body).
    package init(base: Base) {
        self.base = base
    }

    /// The iterator.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var scalars: AsyncUnicodeScalarSequence<Base>.AsyncIterator
        /// Scalars read but not yet returned: at most the character being built and the first scalar of the next.
        var pending = ""

        /// The next character, or `nil` at the end.
        public mutating func next() async throws -> Character? {
            while true {
                var characters = pending.makeIterator()
                if let first = characters.next(), characters.next() != nil {
                    pending.removeFirst()
                    return first
                }
                guard let scalar = try await scalars.next() else {
                    return pending.isEmpty ? nil : pending.removeFirst()
                }
                pending.unicodeScalars.append(scalar)
            }
        }
    }

    /// Makes the iterator.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(scalars: AsyncUnicodeScalarSequence(base: base).makeAsyncIterator())
    }
}
