/// A parsed `Content-Range` response header field value in byte units (RFC 9110 §14.4).
///
/// ```
/// Content-Range     = range-unit SP ( range-resp / unsatisfied-range )
/// range-resp        = incl-range "/" ( complete-length / "*" )
/// incl-range        = first-pos "-" last-pos
/// unsatisfied-range = "*/" complete-length
/// ```
///
/// The parser is strict: the unit must be `bytes` (in any case), followed by exactly one space; the positions must
/// be decimal digits that fit in an `Int64`; `last-pos` must not be less than `first-pos` and must be less than the
/// complete length when that is known. Only optional whitespace around the whole value is tolerated.
public struct ContentRange: Hashable, Sendable {
    /// The inclusive byte range the response carries, or `nil` for an unsatisfied range (`bytes */length`), as sent
    /// with a 416 response.
    public let range: ClosedRange<Int64>?
    /// The length of the complete representation, or `nil` when the server sent `*` because it does not know it.
    ///
    /// Never `nil` when ``range`` is `nil`.
    public let completeLength: Int64?

    /// The number of bytes in ``range``, or `nil` for an unsatisfied range.
    public var rangeLength: Int64? {
        range.map { $0.upperBound - $0.lowerBound + 1 }
    }

    /// Parses a `Content-Range` field value.
    ///
    /// Returns `nil` for anything that does not match the grammar, for a unit other than `bytes`, for
    /// `last-pos < first-pos`, for `last-pos >= complete-length`, for numbers that overflow an `Int64`, and for a
    /// `last-pos` of `Int64.max` (its range's length would not fit in an `Int64`).
    ///
    /// - Parameter headerValue: The field value, for example `bytes 100-199/1000`.
    public init?(headerValue: String) {
        let bytes = Array(HeaderParameters.trim(headerValue).utf8)
        let unit = Array("bytes".utf8)
        guard bytes.count > unit.count + 1,
            zip(bytes, unit).allSatisfy({ Self.asciiLowercase($0) == $1 }),
            bytes[unit.count] == UInt8(ascii: " ")
        else { return nil }
        var scanner = Scanner(bytes: bytes[(unit.count + 1)...])

        if scanner.consume(UInt8(ascii: "*")) {
            guard scanner.consume(UInt8(ascii: "/")), let complete = scanner.number(), scanner.isAtEnd else {
                return nil
            }
            self.range = nil
            self.completeLength = complete
            return
        }

        guard let first = scanner.number(), scanner.consume(UInt8(ascii: "-")),
            let last = scanner.number(), scanner.consume(UInt8(ascii: "/")), last >= first,
            // The range's length (last - first + 1) must fit in an Int64 too: a hostile `0-9223372036854775807/*`
            // would otherwise overflow it.
            last < Int64.max
        else { return nil }
        let complete: Int64?
        if scanner.consume(UInt8(ascii: "*")) {
            complete = nil
        } else if let length = scanner.number(), last < length {
            complete = length
        } else {
            return nil
        }
        guard scanner.isAtEnd else { return nil }
        self.range = first...last
        self.completeLength = complete
    }

    private static func asciiLowercase(_ byte: UInt8) -> UInt8 {
        (byte >= 0x41 && byte <= 0x5A) ? byte + 0x20 : byte
    }

    /// A cursor over the bytes after the unit.
    private struct Scanner {
        var bytes: ArraySlice<UInt8>

        var isAtEnd: Bool { bytes.isEmpty }

        /// Consumes `byte` if it comes next.
        mutating func consume(_ byte: UInt8) -> Bool {
            guard bytes.first == byte else { return false }
            bytes.removeFirst()
            return true
        }

        /// Consumes one or more decimal digits and returns their value, or `nil` if there are none or they overflow.
        mutating func number() -> Int64? {
            var value: Int64 = 0
            var digits = 0
            while let byte = bytes.first, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
                let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = times10.addingReportingOverflow(Int64(byte - UInt8(ascii: "0")))
                guard !overflow1, !overflow2 else { return nil }
                value = sum
                digits += 1
                bytes.removeFirst()
            }
            return digits > 0 ? value : nil
        }
    }
}
