/// The directives of `Cache-Control` fields (RFC 9111 §5.2), request or response.
///
/// Hostile values are bounded: a delta-seconds value too large for the cache is 2^31 seconds (RFC 9111 §1.2.2); a
/// malformed or repeated `max-age` or `s-maxage` makes the response stale (`0`), as §4.2.1 asks; an element with a
/// control character or an unterminated quoted string is ignored; unknown directives are ignored.
public struct CacheControl: Sendable, Equatable {
    public var noStore = false
    public var noCache = false
    public var mustRevalidate = false
    public var isPrivate = false
    public var isPublic = false
    public var noTransform = false
    public var onlyIfCached = false
    public var immutable = false
    public var maxAge: Int?
    public var sharedMaxAge: Int?
    /// `max-stale` without a value accepts any staleness: `Int.max`.
    public var maxStale: Int?
    public var minFresh: Int?

    /// The largest delta-seconds kept (RFC 9111 §1.2.2).
    public static let maximumSeconds = 2_147_483_648

    public init() {}

    /// The directives of every `Cache-Control` field value, in order.
    public init(_ fields: [String]) {
        var seen: Set<String> = []
        for field in fields {
            for element in FieldList.elements(of: Array(field.utf8)) {
                let element = FieldList.trim(element)
                guard !element.isEmpty, !element.contains(where: FieldList.isControl) else { continue }
                var index = element.startIndex
                guard let nameBytes = FieldList.readToken(element, &index) else { continue }
                let name = String(decoding: nameBytes, as: UTF8.self).lowercased()
                FieldList.skipSpaces(element, &index)
                var argument: String?
                if index < element.endIndex {
                    guard element[index] == UInt8(ascii: "="), let value = FieldList.readValue(element, from: index)
                    else {
                        if name == "max-age" || name == "s-maxage" { apply(name, seconds: 0, repeated: false) }
                        continue
                    }
                    argument = value
                }
                let repeated = !seen.insert(name).inserted
                switch name {
                case "no-store": noStore = true
                case "no-cache": noCache = true
                case "must-revalidate", "proxy-revalidate": mustRevalidate = true
                case "private": isPrivate = true
                case "public": isPublic = true
                case "no-transform": noTransform = true
                case "only-if-cached": onlyIfCached = true
                case "immutable": immutable = true
                case "max-stale":
                    maxStale = argument.map { Self.seconds($0) ?? 0 } ?? Int.max
                case "min-fresh":
                    minFresh = argument.flatMap(Self.seconds) ?? 0
                case "max-age", "s-maxage":
                    apply(name, seconds: argument.flatMap(Self.seconds) ?? 0, repeated: repeated)
                default:
                    break
                }
            }
        }
    }

    private mutating func apply(_ name: String, seconds: Int, repeated: Bool) {
        // Two values for one directive make it invalid: treat the response as stale.
        let value = repeated ? 0 : seconds
        if name == "max-age" { maxAge = value } else { sharedMaxAge = value }
    }

    /// `delta-seconds = 1*DIGIT`, capped at ``maximumSeconds``; `nil` for anything else.
    static func seconds(_ text: String) -> Int? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return nil
        }
        var value = 0
        for digit in text.utf8 {
            value = value * 10 + Int(digit - UInt8(ascii: "0"))
            if value >= maximumSeconds { return maximumSeconds }
        }
        return value
    }
}
