/// What one ``StreamDecompressor/decompress(_:into:)`` call did.
struct DecompressionStep {
    /// Where decoding stands after the call.
    enum Outcome {
        /// All the input was read and no output is held back: more input is needed.
        case needsInput
        /// The output is full; the library may hold more decoded bytes, even with no input left.
        case outputFull
        /// The compressed data ended; `consumed` excludes whatever follows it.
        case ended
        /// The data is corrupt, for this reason.
        case corrupt(String)
    }

    /// Input bytes read.
    var consumed: Int
    /// Output bytes written.
    var written: Int
    /// Where decoding stands.
    var outcome: Outcome
}
