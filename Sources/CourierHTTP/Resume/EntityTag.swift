/// The `entity-tag` grammar of RFC 9110 §8.8.3.
///
/// ```
/// entity-tag = [ weak ] opaque-tag
/// weak       = %s"W/"
/// opaque-tag = DQUOTE *etagc DQUOTE
/// etagc      = %x21 / %x23-7E / obs-text
/// ```
enum EntityTag {
    /// The kind of a well-formed entity tag.
    enum Strength: Hashable, Sendable {
        /// A strong validator, usable in `If-Range`.
        case strong
        /// A weak validator (`W/"…"`), which `If-Range` must not carry.
        case weak
    }

    /// The strength of an entity tag, or `nil` if the value is not a single well-formed entity tag.
    ///
    /// Optional whitespace around the value is ignored; the `W/` prefix is case-sensitive.
    ///
    /// - Parameter value: An `ETag` field value.
    static func strength(of value: String) -> Strength? {
        let bytes = Array(HeaderParameters.trim(value).utf8)
        if bytes.starts(with: [UInt8(ascii: "W"), UInt8(ascii: "/")]) {
            return isOpaqueTag(bytes.dropFirst(2)) ? .weak : nil
        }
        return isOpaqueTag(bytes[...]) ? .strong : nil
    }

    /// The entity tag without surrounding whitespace if it is a well-formed strong validator, otherwise `nil`.
    ///
    /// - Parameter value: An `ETag` field value.
    static func strong(_ value: String) -> String? {
        strength(of: value) == .strong ? HeaderParameters.trim(value) : nil
    }

    private static func isOpaqueTag(_ bytes: ArraySlice<UInt8>) -> Bool {
        guard bytes.count >= 2, bytes.first == UInt8(ascii: "\""), bytes.last == UInt8(ascii: "\"") else {
            return false
        }
        return bytes.dropFirst().dropLast().allSatisfy { byte in
            byte == 0x21 || (byte >= 0x23 && byte <= 0x7E) || byte >= 0x80
        }
    }
}
