/// Bytes in hexadecimal, the one way Courier writes them (digests, keyed hashes, nonces).
package enum Hex {
    /// The lowercase hexadecimal form of `bytes`, two digits a byte (`[0x0f, 0xa5]` → `0fa5`).
    ///
    /// Byte by byte from a table: `String(format: "%02x")` goes through Foundation's formatting for every byte.
    package static func lowercase(_ bytes: some Sequence<UInt8>) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    private static let digits: [UInt8] = Array("0123456789abcdef".utf8)
}
