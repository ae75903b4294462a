/// The elements of a comma-separated field value (RFC 9110 §5.6.1): the parts between the commas outside quoted
/// strings, untrimmed. A quoted string that never ends runs to the end of the value, where its element's reader
/// finds it unterminated.
public enum FieldList {
    public static func elements(of bytes: [UInt8]) -> [ArraySlice<UInt8>] {
        var elements: [ArraySlice<UInt8>] = []
        var start = 0
        var index = 0
        var inQuotes = false
        while index < bytes.count {
            let byte = bytes[index]
            if inQuotes {
                if byte == UInt8(ascii: "\\") {
                    index += 1
                } else if byte == UInt8(ascii: "\"") {
                    inQuotes = false
                }
            } else if byte == UInt8(ascii: "\"") {
                inQuotes = true
            } else if byte == UInt8(ascii: ",") {
                elements.append(bytes[start..<index])
                start = index + 1
            }
            index += 1
        }
        elements.append(bytes[start..<bytes.count])
        return elements
    }

    /// A quoted string starting at `index` (its opening quote), unescaped; `index` moves past the closing quote.
    public static func readQuoted(_ bytes: ArraySlice<UInt8>, _ index: inout Int) -> String? {
        var result: [UInt8] = []
        var position = index + 1
        while position < bytes.endIndex {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\\") {
                guard position + 1 < bytes.endIndex else { return nil }
                result.append(bytes[position + 1])
                position += 2
            } else if byte == UInt8(ascii: "\"") {
                index = position + 1
                return String(decoding: result, as: UTF8.self)
            } else {
                result.append(byte)
                position += 1
            }
        }
        return nil
    }

    /// A token (RFC 9110 `tchar`s) starting at `index`; `index` moves past it.
    public static func readToken(_ bytes: ArraySlice<UInt8>, _ index: inout Int) -> ArraySlice<UInt8>? {
        let start = index
        while index < bytes.endIndex, Token.isTokenByte(bytes[index]) { index += 1 }
        return index > start ? bytes[start..<index] : nil
    }

    /// A control character other than HTAB (never valid in a field value).
    public static func isControl(_ byte: UInt8) -> Bool {
        (byte < 0x20 && byte != 0x09) || byte == 0x7F
    }

    /// Moves `index` past spaces and tabs.
    public static func skipSpaces(_ bytes: ArraySlice<UInt8>, _ index: inout Int) {
        while index < bytes.endIndex, bytes[index] == 0x20 || bytes[index] == 0x09 { index += 1 }
    }

    /// `bytes` without leading and trailing spaces and tabs.
    public static func trim(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var start = bytes.startIndex
        var end = bytes.endIndex
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
        return bytes[start..<end]
    }

    /// The value after the `=` at `equals` in `element`: a token or a quoted string (unescaped), followed by nothing
    /// but spaces; `nil` otherwise.
    public static func readValue(_ element: ArraySlice<UInt8>, from equals: Int) -> String? {
        var index = equals + 1
        FieldList.skipSpaces(element, &index)
        guard index < element.endIndex else { return nil }
        let value: String
        if element[index] == UInt8(ascii: "\"") {
            guard let quoted = FieldList.readQuoted(element, &index) else { return nil }
            value = quoted
        } else {
            guard let token = FieldList.readToken(element, &index) else { return nil }
            value = String(decoding: token, as: UTF8.self)
        }
        FieldList.skipSpaces(element, &index)
        return index == element.endIndex ? value : nil
    }
}
