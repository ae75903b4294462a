import Foundation

/// A `data:` URL (RFC 2397) taken apart: its media type and its decoded bytes.
///
/// `data:[<mediatype>][;base64],<data>`. The media type defaults to `text/plain;charset=US-ASCII`, and a URL that
/// gives only `;charset=…` means `text/plain` with that charset. The data is percent-decoded, then, with `;base64`,
/// base64-decoded (ASCII whitespace ignored, padding optional). A fragment (`#…`) is not part of the data, as the URL
/// standard's `data:` URL processor and Darwin have it. What cannot be decoded is `badURL`: no comma, a broken percent
/// escape, invalid base64 or a malformed media type.
public struct DataURL: Hashable, Sendable {
    /// The lowercased `type/subtype`.
    public var mimeType: String
    /// The charset, lowercased, or `nil` when the URL names a media type without one.
    public var textEncodingName: String?
    /// The decoded bytes.
    public var body: Data

    /// Parses `string`, a whole `data:` URL; its fragment, if any, is ignored.
    public init(parsing string: String) throws(TransferError) {
        var utf8 = Array(string.utf8)
        // The first `#` starts the fragment (a `#` in the data is written `%23`): the URL, not the data, carries it.
        if let hash = utf8.firstIndex(of: UInt8(ascii: "#")) { utf8.removeSubrange(hash...) }
        guard utf8.count >= 5, String(decoding: utf8[0..<5], as: UTF8.self).lowercased() == "data:" else {
            throw .badURL("\(Self.shortened(string)) is not a data: URL")
        }
        guard let comma = utf8[5...].firstIndex(of: UInt8(ascii: ",")) else {
            throw .badURL("the data: URL \(Self.shortened(string)) has no comma before its data")
        }
        guard let headerBytes = PercentDecoding.decode(Substring(decoding: utf8[5..<comma], as: UTF8.self)),
            let dataBytes = PercentDecoding.decode(Substring(decoding: utf8[(comma + 1)...], as: UTF8.self))
        else {
            throw .badURL("the data: URL \(Self.shortened(string)) has a broken percent escape")
        }
        var header = String(decoding: headerBytes, as: UTF8.self)
        let isBase64 = header.lowercased().hasSuffix(";base64")
        if isBase64 { header.removeLast(";base64".count) }
        header = HeaderParameters.trim(header)

        if header.isEmpty {
            (mimeType, textEncodingName) = ("text/plain", "us-ascii")
        } else {
            // A leading parameter (";charset=utf-8") stands for text/plain with it.
            let type = MediaType(parsing: header.hasPrefix(";") ? "text/plain" + header : header)
            guard let mimeType = type.mimeType else {
                throw .badURL("the data: URL \(Self.shortened(string)) has a malformed media type")
            }
            self.mimeType = mimeType
            self.textEncodingName = type.textEncodingName
        }

        if isBase64 {
            guard let decoded = Self.base64Decoded(dataBytes) else {
                throw .badURL("the data: URL \(Self.shortened(string)) has invalid base64 data")
            }
            body = decoded
        } else {
            body = Data(dataBytes)
        }
    }

    /// Base64 with ASCII whitespace ignored and the padding optional (`nil` when anything else is wrong).
    static func base64Decoded(_ bytes: [UInt8]) -> Data? {
        var text = bytes.filter { !(($0 == 0x20) || ($0 >= 0x09 && $0 <= 0x0D)) }
        // Padding, if any, only at the end; without it, add what is missing.
        guard text.count % 4 != 1 else { return nil }
        while text.count % 4 != 0 { text.append(UInt8(ascii: "=")) }
        return Data(base64Encoded: Data(text))
    }

    /// The URL cut to a length an error message can carry (data: URLs can be megabytes long).
    private static func shortened(_ string: String) -> String {
        string.utf8.count <= 64 ? string : String(string.prefix(60)) + "…"
    }
}
