import Foundation

/// The property-list shape of ``ResumeData``, keyed with Darwin's names.
///
/// This type only moves values in and out of a property list and checks their types; ``ResumeData`` validates the
/// values.
struct ResumeDataArchive: Codable, Equatable {
    /// The property-list shape of ``ResumeData/Request``.
    struct Request: Codable, Equatable {
        var url: String
        var method: String
        var headers: [String: String]
        var timeoutInterval: Double
        /// Absent unless `false`: resume data made before the key existed, or by a request that handles cookies,
        /// reads as `true`.
        var httpShouldHandleCookies: Bool? = nil
    }

    var downloadURL: String
    var bytesReceived: Int64
    var entityTag: String?
    var tempFileName: String
    var originalRequest: Request
    var currentRequest: Request
    var serverDownloadDate: String?
    var version: Int
    /// Courier's own key (Darwin has none for it, and ignores unknown keys): the complete length of the
    /// representation, so a resumed 206 for a resource whose length changed is never appended.
    var expectedTotalLength: Int64?

    enum CodingKeys: String, CodingKey {
        case downloadURL = "NSURLSessionDownloadURL"
        case bytesReceived = "NSURLSessionResumeBytesReceived"
        case entityTag = "NSURLSessionResumeEntityTag"
        case tempFileName = "NSURLSessionResumeInfoTempFileName"
        case originalRequest = "NSURLSessionResumeOriginalRequest"
        case currentRequest = "NSURLSessionResumeCurrentRequest"
        case serverDownloadDate = "NSURLSessionResumeServerDownloadDate"
        case version = "NSURLSessionResumeInfoVersion"
        case expectedTotalLength = "CourierResumeExpectedTotalLength"
    }

    /// Only the version, read first so that data of another version is reported as such rather than as a shape error.
    private struct VersionProbe: Decodable {
        var version: Int

        enum CodingKeys: String, CodingKey {
            case version = "NSURLSessionResumeInfoVersion"
        }
    }

    /// The largest resume data read, in bytes. Courier's own is a few kilobytes (two requests' URLs and header
    /// fields); the bound keeps a hostile blob from costing the parser several times its size in memory.
    static let maximumSize = 1 << 20
    /// The most `<plist>`, `<dict>` and `<array>` elements a text property list may hold. Courier writes five
    /// dictionaries (the archive, two requests and their header fields); unknown keys leave room for more.
    static let maximumElements = 64

    /// Refuses data the property-list parser must not be given: more than ``maximumSize`` bytes, or a text property
    /// list with more than ``maximumElements`` container elements. Foundation's XML property-list scanner descends
    /// one level of recursion for each nested `<plist>`, `<dict>` or `<array>` element, with no limit, so resume data
    /// of a few hundred kilobytes of nested `<array>` elements would overflow the stack and crash the app inside
    /// `downloadTask(withResumeData:)`. A binary property list is read one object at a time, as the decoder asks
    /// for it, and needs no such bound.
    static func checkShape(_ data: Data) throws(TransferError) {
        guard data.count <= maximumSize else {
            throw ResumeData.invalid("it is larger than \(maximumSize) bytes")
        }
        if data.starts(with: "bplist".utf8) { return }
        let problem: String? = data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) -> String? in
            let bytes = buffer.bindMemory(to: UInt8.self)
            var elements = 0
            for index in bytes.indices {
                let byte = bytes[index]
                // UTF-16 or UTF-32 text (which Foundation converts before parsing) would hide its elements from the
                // count below; every such property list has NUL bytes (its `<` is one), and UTF-8 text never needs one.
                if byte == 0 { return "it is not a UTF-8 or binary property list" }
                guard byte == UInt8(ascii: "<") else { continue }
                let rest = bytes[(index + 1)...]
                if hasElementName(rest) {
                    elements += 1
                    if elements > maximumElements {
                        return "it has more than \(maximumElements) plist, dict or array elements"
                    }
                }
            }
            return nil
        }
        if let problem { throw ResumeData.invalid(problem) }
    }

    private static let elementNames: [[UInt8]] = ["plist", "dict", "array"].map { Array($0.utf8) }

    /// Whether `bytes` start with `plist`, `dict` or `array` (in any case: counting too many only refuses data).
    private static func hasElementName(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        elementNames.contains { name in
            bytes.count >= name.count && zip(bytes, name).allSatisfy { ($0 | 0x20) == $1 }
        }
    }

    /// Reads the archive from a property list (XML, binary or OpenStep), rejecting any version but
    /// ``ResumeData/version``.
    ///
    /// - Parameter data: The resume data.
    static func decode(_ data: Data) throws(TransferError) -> ResumeDataArchive {
        try checkShape(data)
        let decoder = PropertyListDecoder()
        let version: Int
        do {
            version = try decoder.decode(VersionProbe.self, from: data).version
        } catch {
            throw ResumeData.invalid(describe(error))
        }
        guard version == ResumeData.version else {
            throw ResumeData.invalid(
                "\(CodingKeys.version.rawValue) is \(version), but Courier reads only version \(ResumeData.version)"
            )
        }
        do {
            return try decoder.decode(ResumeDataArchive.self, from: data)
        } catch {
            throw ResumeData.invalid(describe(error))
        }
    }

    /// Writes the archive as an XML property list.
    func encode() throws(TransferError) -> Data {
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .xml
        do {
            return try encoder.encode(self)
        } catch {
            throw .cannotDecodeRawData("Resume data could not be encoded: \(error)")
        }
    }

    /// Says what was wrong, naming the key, without echoing the (possibly hostile) value.
    private static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "it is not a property list" }
        switch error {
        case .typeMismatch(let type, let context):
            if context.codingPath.isEmpty {
                return "it is not a property list dictionary"
            }
            return "\(path(context.codingPath)) has the wrong type (expected \(type))"
        case .valueNotFound(let type, let context):
            return "\(path(context.codingPath)) has no value (expected \(type))"
        case .keyNotFound(let key, let context):
            return "\(path(context.codingPath + [key])) is missing"
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty {
                return "it is not a property list"
            }
            return "\(path(context.codingPath)) holds an invalid value"
        @unknown default:
            return "it could not be decoded"
        }
    }

    private static func path(_ codingPath: [any CodingKey]) -> String {
        codingPath.map(\.stringValue).joined(separator: ".")
    }
}
