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
/// Work is linear in the input: one pass splits a field at the commas outside quoted strings (``FieldList``), one
/// pass reads each element.
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
        for element in FieldList.elements(of: bytes) { read(element) }
        finish()

        func read(_ element: ArraySlice<UInt8>) {
            let element = FieldList.trim(element)
            guard !element.isEmpty else { return }
            if element.contains(where: FieldList.isControl) {
                currentIsBroken = true
                return
            }
            var index = element.startIndex
            guard let first = FieldList.readToken(element, &index) else {
                currentIsBroken = true
                return
            }
            let spaceStart = index
            FieldList.skipSpaces(element, &index)
            if index == element.endIndex {
                // A lone token: a scheme without parameters.
                finish()
                current = AuthenticationChallenge(scheme: String(decoding: first, as: UTF8.self))
                return
            }
            if element[index] == UInt8(ascii: "=") {
                // `name=value`: a parameter of the current challenge.
                guard current != nil, let value = FieldList.readValue(element, from: index) else {
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
            if let name = FieldList.readToken(rest, &restIndex) {
                FieldList.skipSpaces(rest, &restIndex)
                if restIndex < rest.endIndex, rest[restIndex] == UInt8(ascii: "="),
                    let value = FieldList.readValue(rest, from: restIndex)
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

}
