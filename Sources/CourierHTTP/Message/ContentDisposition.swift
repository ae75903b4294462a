/// Extraction of a safe file name from a `Content-Disposition` header value (RFC 6266).
public enum ContentDisposition {
    /// Returns the file name suggested by a `Content-Disposition` header value, made safe to use as a file name.
    ///
    /// The extended `filename*=charset'language'percent-encoded` parameter (RFC 8187, UTF-8 or ISO-8859-1) is
    /// preferred over `filename=`. Quoted strings are unquoted and unescaped before the parameters are split
    /// (`filename="aa=bb\;"` gives `aa=bb;`). The result never contains `/` or `\` (each becomes `_`) and never
    /// starts with a dot.
    ///
    /// - Parameter headerValue: The raw header field value, for example `attachment; filename="report.pdf"`.
    /// - Returns: The file name, or `nil` when there is none or nothing usable remains (empty, only dots).
    public static func filename(from headerValue: String) -> String? {
        let parsed = HeaderParameters(parsing: headerValue)
        if let extended = parsed.value(for: "filename*"), let decoded = decodeExtendedValue(extended),
            let name = sanitizedFilename(decoded)
        {
            return name
        }
        return parsed.value(for: "filename").flatMap(sanitizedFilename)
    }

    /// Makes a candidate file name safe: `/` and `\` become `_` (FoundationNetworking turns `/a/b` into `_a_b`; the
    /// backslash too, so that the name is never a path anywhere), control characters and surrounding whitespace are
    /// removed, and so are leading dots, so that the name is never `.`, `..` or a hidden file.
    ///
    /// - Parameter candidate: A file name proposed by a peer, possibly hostile (`../../etc/passwd`).
    /// - Returns: The safe file name, or `nil` when nothing usable remains.
    public static func sanitizedFilename(_ candidate: String) -> String? {
        let scalars = candidate.unicodeScalars.compactMap { scalar -> Unicode.Scalar? in
            switch scalar {
            case "/", "\\": return "_"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F: return nil
            default: return scalar
            }
        }
        // Dots and whitespace together: dropping dots, then spaces, could uncover more dots (". .bashrc").
        let visible = String(String.UnicodeScalarView(scalars))
            .drop { $0 == "." || $0.isWhitespace }
            .trimmingWhitespace()
        return visible.isEmpty ? nil : visible
    }

    /// Decodes an RFC 8187 extended value `charset'language'value-chars`.
    static func decodeExtendedValue(_ value: String) -> String? {
        let parts = value.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = PercentDecoding.decode(parts[2]) else { return nil }
        switch HeaderName.canonical(String(parts[0])) {
        case "utf-8":
            let decoded = String(decoding: bytes, as: UTF8.self)
            return Array(decoded.utf8) == bytes ? decoded : nil
        case "iso-8859-1":
            return String(String.UnicodeScalarView(bytes.compactMap { Unicode.Scalar(UInt32($0)) }))
        default:
            return nil
        }
    }
}

extension StringProtocol {
    /// The string without leading and trailing whitespace (including newlines).
    fileprivate func trimmingWhitespace() -> String {
        guard let first = firstIndex(where: { !$0.isWhitespace }), let last = lastIndex(where: { !$0.isWhitespace })
        else { return "" }
        return String(self[first...last])
    }
}
