/// Percent-decoding of byte sequences (RFC 3986 §2.1), without any character set interpretation.
public enum PercentDecoding {
    /// Decodes `%XX` escapes into bytes; other characters are kept as their UTF-8 bytes.
    ///
    /// - Parameter value: The percent-encoded text.
    /// - Returns: The decoded bytes, or `nil` when an escape is truncated or not hexadecimal.
    public static func decode<S: StringProtocol>(_ value: S) -> [UInt8]? {
        var result: [UInt8] = []
        result.reserveCapacity(value.utf8.count)
        var iterator = value.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                result.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                return nil
            }
            result.append(high << 4 | low)
        }
        return result
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
