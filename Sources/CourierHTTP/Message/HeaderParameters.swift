/// A parser for header values of the form `value; name=token; name="quoted string"` (RFC 9110 §5.6.6).
///
/// The parser is lenient: it tolerates surrounding spaces, empty parameters and unterminated quoted strings, and never
/// fails. Parameter names are lowercased; values have quotes and backslash escapes removed.
public struct HeaderParameters: Hashable, Sendable {
    /// One parameter of a header value.
    public struct Parameter: Hashable, Sendable {
        /// The parameter name, lowercased.
        public var name: String
        /// The parameter value, without quotes or escapes.
        public var value: String
    }

    /// The part of the header value before the first `;`, trimmed of spaces and tabs.
    public var leading: String

    /// The parameters in the order they appear.
    public var parameters: [Parameter]

    /// Parses a header value into its leading part and its parameters.
    ///
    /// - Parameter headerValue: The raw header field value.
    public init(parsing headerValue: String) {
        let segments = Self.split(headerValue)
        leading = Self.trim(segments.first ?? "")
        parameters = segments.dropFirst().compactMap(Self.parameter(from:))
    }

    /// The value of the first parameter with the given name.
    ///
    /// - Parameter name: The parameter name, compared case-insensitively.
    public func value(for name: String) -> String? {
        let wanted = HeaderName.canonical(name)
        return parameters.first { $0.name == wanted }?.value
    }

    private static func parameter(from segment: Substring) -> Parameter? {
        guard let equals = segment.firstIndex(of: "=") else { return nil }
        let name = trim(segment[..<equals])
        guard !name.isEmpty else { return nil }
        let rawValue = trim(segment[segment.index(after: equals)...])
        return Parameter(name: HeaderName.canonical(name), value: unquote(rawValue))
    }

    /// Splits on `;` outside of quoted strings. A backslash escapes the next character inside a quoted string and, as
    /// FoundationNetworking reads `Content-Disposition`, outside one too (`aa=bb\;` does not end the parameter).
    private static func split(_ value: String) -> [Substring] {
        var segments: [Substring] = []
        var start = value.startIndex
        var index = value.startIndex
        var inQuotes = false
        while index < value.endIndex {
            let character = value[index]
            if character == "\\" {
                index = value.index(after: index)
                if index < value.endIndex {
                    index = value.index(after: index)
                }
                continue
            }
            if character == "\"" {
                inQuotes.toggle()
            } else if character == ";", !inQuotes {
                segments.append(value[start..<index])
                start = value.index(after: index)
            }
            index = value.index(after: index)
        }
        segments.append(value[start...])
        return segments
    }

    /// Removes surrounding double quotes and backslash escapes from a quoted string; returns tokens unchanged.
    static func unquote(_ value: String) -> String {
        guard value.hasPrefix("\"") else { return value }
        var result = ""
        var escaping = false
        for character in value.dropFirst() {
            if escaping {
                result.append(character)
                escaping = false
            } else if character == "\\" {
                escaping = true
            } else if character == "\"" {
                break
            } else {
                result.append(character)
            }
        }
        return result
    }

    /// Trims spaces and horizontal tabs (HTTP's optional whitespace) from both ends.
    static func trim<S: StringProtocol>(_ value: S) -> String {
        // Spaces and tabs are single bytes: trim on the UTF-8 view, without grapheme breaking.
        let bytes = value.utf8
        let isOWS: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 }
        guard let first = bytes.firstIndex(where: { !isOWS($0) }) else { return "" }
        var last = first
        var index = first
        while index != bytes.endIndex {
            if !isOWS(bytes[index]) { last = index }
            bytes.formIndex(after: &index)
        }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }
}
