/// Parses `WWW-Authenticate` and `Proxy-Authenticate` fields (RFC 9110 §11.6.1) into challenges, in order.
///
/// A field may hold several challenges separated by commas, and a response may carry several fields. Hostile input
/// is bounded and never fatal:
/// - at most ``maximumChallenges`` challenges are returned (the rest are ignored);
/// - a field longer than ``maximumFieldLength`` bytes is ignored whole;
/// - an element with a control character (NUL included), an unterminated quoted string, or a parameter before any
///   scheme is dropped — with the challenge it belongs to, so that a half-read challenge is never answered;
/// - a parameter given twice keeps its first value, as RFC 9110 asks recipients to treat such a challenge.
///
/// Work is linear in the input: one pass splits a field at the commas outside quoted strings, one pass reads each
/// element.
public enum AuthenticationChallengeParser {
    /// The most challenges returned for one response.
    public static let maximumChallenges = 64
    /// The longest field read, in bytes.
    public static let maximumFieldLength = 16 * 1024

    /// The challenges of `fields` (the values of every `WWW-Authenticate` field, or every `Proxy-Authenticate`
    /// field, in the order received).
    public static func parse(_ fields: [String]) -> [AuthenticationChallenge] {
        var challenges: [AuthenticationChallenge] = []
        for field in fields {
            let bytes = Array(field.utf8)
            guard bytes.count <= maximumFieldLength else { continue }
            parse(bytes, into: &challenges)
            if challenges.count >= maximumChallenges { break }
        }
        return Array(challenges.prefix(maximumChallenges))
    }

    private static func parse(_ bytes: [UInt8], into challenges: inout [AuthenticationChallenge]) {
        var current: AuthenticationChallenge?
        var currentIsBroken = false
        func finish() {
            if let challenge = current, !currentIsBroken { challenges.append(challenge) }
            current = nil
            currentIsBroken = false
        }
        for element in splitOutsideQuotes(bytes) { read(element) }
        finish()

        func read(_ element: ArraySlice<UInt8>) {
            let element = trim(element)
            guard !element.isEmpty else { return }
            if element.contains(where: isControl) {
                currentIsBroken = true
                return
            }
            var index = element.startIndex
            guard let first = readToken(element, &index) else {
                currentIsBroken = true
                return
            }
            let spaceStart = index
            skipSpaces(element, &index)
            if index == element.endIndex {
                // A lone token: a scheme without parameters.
                finish()
                current = AuthenticationChallenge(scheme: String(decoding: first, as: UTF8.self))
                return
            }
            if element[index] == UInt8(ascii: "=") {
                // `name=value`: a parameter of the current challenge.
                guard current != nil, let value = readValue(element, from: index) else {
                    currentIsBroken = true
                    return
                }
                addParameter(String(decoding: first, as: UTF8.self), value)
                return
            }
            guard index > spaceStart else {
                currentIsBroken = true
                return
            }
            // `scheme rest`: a new challenge whose rest is a first parameter or a token68.
            finish()
            current = AuthenticationChallenge(scheme: String(decoding: first, as: UTF8.self))
            let rest = element[index...]
            var restIndex = rest.startIndex
            if let name = readToken(rest, &restIndex) {
                skipSpaces(rest, &restIndex)
                if restIndex < rest.endIndex, rest[restIndex] == UInt8(ascii: "="),
                    let value = readValue(rest, from: restIndex)
                {
                    addParameter(String(decoding: name, as: UTF8.self), value)
                    return
                }
            }
            if isToken68(rest) {
                current?.token68 = String(decoding: rest, as: UTF8.self)
            } else {
                currentIsBroken = true
            }
        }

        func addParameter(_ name: String, _ value: String) {
            guard current?.parameter(name) == nil else { return }  // the first value wins
            current?.parameters.append((name, value))
        }
    }

    /// The element's value after the `=` at `equals`: a token or a quoted string, then nothing but spaces.
    private static func readValue(_ element: ArraySlice<UInt8>, from equals: Int) -> String? {
        var index = equals + 1
        skipSpaces(element, &index)
        guard index < element.endIndex else { return nil }
        let value: String
        if element[index] == UInt8(ascii: "\"") {
            guard let quoted = readQuoted(element, &index) else { return nil }
            value = quoted
        } else {
            guard let token = readToken(element, &index) else { return nil }
            value = String(decoding: token, as: UTF8.self)
        }
        skipSpaces(element, &index)
        return index == element.endIndex ? value : nil
    }

    /// A quoted string starting at `index`, unescaped; `index` moves past its closing quote.
    private static func readQuoted(_ bytes: ArraySlice<UInt8>, _ index: inout Int) -> String? {
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

    /// The elements of a field: the parts between commas outside quoted strings. A quoted string that never ends
    /// runs to the end of the field, where reading its value fails (and drops its challenge).
    private static func splitOutsideQuotes(_ bytes: [UInt8]) -> [ArraySlice<UInt8>] {
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

    private static func readToken(_ bytes: ArraySlice<UInt8>, _ index: inout Int) -> ArraySlice<UInt8>? {
        let start = index
        while index < bytes.endIndex, Token.isTokenByte(bytes[index]) { index += 1 }
        return index > start ? bytes[start..<index] : nil
    }

    /// `token68 = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`
    private static func isToken68(_ bytes: ArraySlice<UInt8>) -> Bool {
        var index = bytes.startIndex
        while index < bytes.endIndex, isToken68Character(bytes[index]) { index += 1 }
        guard index > bytes.startIndex else { return false }
        while index < bytes.endIndex, bytes[index] == UInt8(ascii: "=") { index += 1 }
        return index == bytes.endIndex
    }

    private static func isToken68Character(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "+"),
            UInt8(ascii: "/"):
            return true
        default:
            return false
        }
    }

    private static func isControl(_ byte: UInt8) -> Bool {
        (byte < 0x20 && byte != 0x09) || byte == 0x7F
    }

    private static func skipSpaces(_ bytes: ArraySlice<UInt8>, _ index: inout Int) {
        while index < bytes.endIndex, bytes[index] == 0x20 || bytes[index] == 0x09 { index += 1 }
    }

    private static func trim(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var start = bytes.startIndex
        var end = bytes.endIndex
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
        return bytes[start..<end]
    }
}
