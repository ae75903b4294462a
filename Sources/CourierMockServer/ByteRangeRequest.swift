/// A parsed `Range` request header field with a single byte range (RFC 9110, section 14.1.2).
enum ByteRangeRequest: Equatable {
    /// `bytes=first-` or `bytes=first-last`.
    case fromStart(first: Int64, last: Int64?)
    /// `bytes=-suffixLength`.
    case suffix(length: Int64)

    /// Parses `value`; returns `nil` for anything but a single, syntactically valid byte range, which a server
    /// may then ignore.
    init?(headerValue value: String) {
        let trimmed = value.trimmingSpaces()
        guard let equals = trimmed.firstIndex(of: "=") else { return nil }
        guard trimmed[..<equals].trimmingSpaces().lowercased() == "bytes" else { return nil }
        let spec = String(trimmed[trimmed.index(after: equals)...]).trimmingSpaces()
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return nil }
        let firstText = spec[..<dash]
        let lastText = spec[spec.index(after: dash)...]
        if firstText.isEmpty {
            guard let length = Self.number(lastText) else { return nil }
            self = .suffix(length: length)
            return
        }
        guard let first = Self.number(firstText) else { return nil }
        if lastText.isEmpty {
            self = .fromStart(first: first, last: nil)
            return
        }
        guard let last = Self.number(lastText), last >= first else { return nil }
        self = .fromStart(first: first, last: last)
    }

    /// The satisfiable byte range within a representation of `length` bytes, or `nil` when unsatisfiable.
    func resolve(length: Int64) -> Range<Int64>? {
        switch self {
        case .fromStart(let first, let last):
            guard first < length else { return nil }
            // A last-pos at or past the end means the end (RFC 9110 §14.1.1); clamp before adding one, as a last-pos
            // of Int64.max is valid and `+ 1` would overflow.
            let end = min(last ?? (length - 1), length - 1) + 1
            return first..<end
        case .suffix(let suffixLength):
            guard suffixLength > 0, length > 0 else { return nil }
            return max(0, length - suffixLength)..<length
        }
    }

    /// The value of a run of digits; one too large for Int64 is Int64.max, which means the same for a position or
    /// a suffix length: past the end of any representation.
    private static func number(_ text: Substring) -> Int64? {
        guard !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int64(text) ?? .max
    }
}
