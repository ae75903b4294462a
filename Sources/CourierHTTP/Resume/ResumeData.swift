import Foundation

/// The resume data of an interrupted download: what a cancelled or failed download task hands out and
/// `downloadTask(withResumeData:)` takes back.
///
/// The encoded form is an XML property list dictionary using Darwin's key names, so tools that inspect Darwin resume
/// data can read it:
///
/// | Key                                     | Type      | Value                                                     |
/// |-----------------------------------------|-----------|-----------------------------------------------------------|
/// | `NSURLSessionResumeInfoVersion`         | `integer` | ``version`` (2, Darwin's current version as well).         |
/// | `NSURLSessionDownloadURL`               | `string`  | ``downloadURL``, absolute, `http` or `https`.              |
/// | `NSURLSessionResumeBytesReceived`       | `integer` | ``bytesReceived``, not negative.                           |
/// | `NSURLSessionResumeEntityTag`           | `string`  | ``entityTag``; absent when `nil`.                          |
/// | `NSURLSessionResumeServerDownloadDate`  | `string`  | ``serverDownloadDate`` (`Last-Modified`); absent when `nil`. |
/// | `NSURLSessionResumeInfoTempFileName`    | `string`  | ``tempFileName``, a bare name in Courier's temp directory. |
/// | `NSURLSessionResumeOriginalRequest`     | `dict`    | ``originalRequest``, see ``Request`` for the format.       |
/// | `NSURLSessionResumeCurrentRequest`      | `dict`    | ``currentRequest``, see ``Request`` for the format.        |
///
/// Darwin stores archived `NSURLRequest` data under the two request keys; Courier cannot, so it stores the dictionary
/// described by ``Request`` and rejects Darwin's archived form. Unknown keys are ignored.
///
/// Resume data comes from the caller and may be hostile. Every initializer validates its input so that an instance
/// can never make the engine read or write outside Courier's temp directory, send a non-HTTP request, or inject
/// header fields; failures throw ``TransferError`` with code `cannotDecodeRawData` and a message naming what was
/// wrong.
public struct ResumeData: Hashable, Sendable {
    /// The format version Courier writes and the only one it reads.
    public static let version = 2
    /// The longest accepted ``tempFileName``, in UTF-8 bytes (`NAME_MAX` on Linux).
    public static let maximumTempFileNameLength = 255

    /// The URL the download was fetching when it stopped (after redirects).
    public let downloadURL: URL
    /// The number of body bytes in the partial file that can be kept.
    public let bytesReceived: Int64
    /// The strong `ETag` of the interrupted response, if it had one.
    public let entityTag: String?
    /// The `Last-Modified` value of the interrupted response, if it had one.
    public let serverDownloadDate: String?
    /// The name of the partial file inside Courier's temp directory; never a path.
    public let tempFileName: String
    /// The request the task was created with.
    public let originalRequest: Request
    /// The request the task was sending when it stopped (after redirects).
    public let currentRequest: Request
    /// The complete length of the representation the partial file belongs to, when the interrupted response gave
    /// it. A resumed response that reports another length is not appended.
    public let expectedTotalLength: Int64?

    /// What the partial file holds, for ``ResumeDecision/decide(resuming:status:responseHeader:)``.
    public var partialDownload: PartialDownload {
        PartialDownload(
            offset: bytesReceived,
            entityTag: entityTag,
            lastModified: serverDownloadDate,
            totalLength: expectedTotalLength
        )
    }

    /// Creates resume data, validating every value.
    ///
    /// An empty ``entityTag`` or ``serverDownloadDate`` is stored as `nil`.
    ///
    /// - Parameters:
    ///   - downloadURL: An absolute `http` or `https` URL with a host.
    ///   - bytesReceived: A non-negative byte count.
    ///   - entityTag: The response's entity tag; no control characters.
    ///   - serverDownloadDate: The response's `Last-Modified` value; no control characters.
    ///   - tempFileName: A bare file name: not empty, not `.` or `..`, without `/`, `\`, NUL or other control
    ///     characters, at most ``maximumTempFileNameLength`` UTF-8 bytes.
    ///   - originalRequest: The request the task was created with.
    ///   - currentRequest: The request the task was sending.
    ///   - expectedTotalLength: The complete length of the representation, if known; a negative value counts as
    ///     unknown.
    /// - Throws: ``TransferError`` with code `cannotDecodeRawData` when a value is invalid.
    public init(
        downloadURL: URL,
        bytesReceived: Int64,
        entityTag: String?,
        serverDownloadDate: String?,
        tempFileName: String,
        originalRequest: Request,
        currentRequest: Request,
        expectedTotalLength: Int64? = nil
    ) throws(TransferError) {
        try Self.checkHTTPURL(downloadURL, key: ResumeDataArchive.CodingKeys.downloadURL.rawValue)
        guard bytesReceived >= 0 else {
            throw Self.invalid("\(ResumeDataArchive.CodingKeys.bytesReceived.rawValue) is negative")
        }
        try Self.checkTempFileName(tempFileName)
        self.downloadURL = downloadURL.absoluteURL
        self.bytesReceived = bytesReceived
        self.entityTag = try Self.checkedText(entityTag, key: ResumeDataArchive.CodingKeys.entityTag.rawValue)
        self.serverDownloadDate = try Self.checkedText(
            serverDownloadDate,
            key: ResumeDataArchive.CodingKeys.serverDownloadDate.rawValue
        )
        self.tempFileName = tempFileName
        self.originalRequest = originalRequest
        self.currentRequest = currentRequest
        self.expectedTotalLength = expectedTotalLength.flatMap { $0 >= 0 ? $0 : nil }
    }

    /// Decodes and validates resume data.
    ///
    /// The data may be an XML, binary or OpenStep property list. Anything that is not a dictionary of the version
    /// Courier writes, with every key present and of the right type and every value valid (see the initializer),
    /// is rejected; so is data of more than 1 MiB, and a text property list that is not UTF-8 or has more than 64
    /// `plist`, `dict` and `array` elements, before it is parsed (Foundation's XML parser has no nesting limit).
    ///
    /// - Parameter data: Resume data, as handed to `downloadTask(withResumeData:)`.
    /// - Throws: ``TransferError`` with code `cannotDecodeRawData` saying what was wrong.
    public init(decoding data: Data) throws(TransferError) {
        let archive = try ResumeDataArchive.decode(data)
        guard let downloadURL = URL(string: archive.downloadURL) else {
            throw Self.invalid("\(ResumeDataArchive.CodingKeys.downloadURL.rawValue) is not a URL")
        }
        try self.init(
            downloadURL: downloadURL,
            bytesReceived: archive.bytesReceived,
            entityTag: archive.entityTag,
            serverDownloadDate: archive.serverDownloadDate,
            tempFileName: archive.tempFileName,
            originalRequest: Request(
                archive: archive.originalRequest,
                key: ResumeDataArchive.CodingKeys.originalRequest.rawValue
            ),
            currentRequest: Request(
                archive: archive.currentRequest,
                key: ResumeDataArchive.CodingKeys.currentRequest.rawValue
            ),
            expectedTotalLength: archive.expectedTotalLength
        )
    }

    /// Encodes the resume data as an XML property list (see the type's documentation for the keys).
    ///
    /// - Throws: ``TransferError`` with code `cannotDecodeRawData` if the property list encoder fails, which the
    ///   validated values should never cause.
    public func encoded() throws(TransferError) -> Data {
        try ResumeDataArchive(
            downloadURL: downloadURL.absoluteString,
            bytesReceived: bytesReceived,
            entityTag: entityTag,
            tempFileName: tempFileName,
            originalRequest: originalRequest.archive,
            currentRequest: currentRequest.archive,
            serverDownloadDate: serverDownloadDate,
            version: Self.version,
            expectedTotalLength: expectedTotalLength
        ).encode()
    }

    /// Checks the resume data against the partial file the engine found for ``tempFileName``.
    ///
    /// A file longer than ``bytesReceived`` is fine (the engine truncates it to ``bytesReceived``); a shorter one
    /// means the resume data does not describe this file.
    ///
    /// - Parameter partialFileSize: The size of the partial file in bytes.
    /// - Throws: ``TransferError`` with code `cannotDecodeRawData` when ``bytesReceived`` exceeds the file size.
    public func validate(partialFileSize: Int64) throws(TransferError) {
        guard partialFileSize >= 0 else {
            throw Self.invalid("the partial file size \(partialFileSize) is negative")
        }
        guard bytesReceived <= partialFileSize else {
            throw Self.invalid(
                "\(ResumeDataArchive.CodingKeys.bytesReceived.rawValue) is \(bytesReceived), "
                    + "but the partial file holds only \(partialFileSize) bytes"
            )
        }
    }

    /// The error for invalid resume data.
    static func invalid(_ reason: String) -> TransferError {
        .cannotDecodeRawData("Invalid resume data: \(reason).")
    }

    /// Checks that a URL is absolute, `http` or `https`, and has a host.
    static func checkHTTPURL(_ url: URL, key: String) throws(TransferError) {
        let scheme = url.absoluteURL.scheme?.lowercased()
        guard scheme == "http" || scheme == "https" else {
            throw invalid("\(key) is not an http or https URL")
        }
        guard let host = url.absoluteURL.host, !host.isEmpty else {
            throw invalid("\(key) has no host")
        }
    }

    private static func checkTempFileName(_ name: String) throws(TransferError) {
        let key = ResumeDataArchive.CodingKeys.tempFileName.rawValue
        guard !name.isEmpty else {
            throw invalid("\(key) is empty")
        }
        // Compare bytes, not Characters: a combining mark after "/" forms a Character that is not equal to "/".
        let bytes = Array(name.utf8)
        guard bytes != [UInt8(ascii: ".")], bytes != [UInt8(ascii: "."), UInt8(ascii: ".")] else {
            throw invalid("\(key) is a directory reference")
        }
        guard !bytes.contains(UInt8(ascii: "/")), !bytes.contains(UInt8(ascii: "\\")) else {
            throw invalid("\(key) contains a path separator")
        }
        guard FieldText.hasNoControlCharacters(name), !bytes.contains(UInt8(ascii: "\t")) else {
            throw invalid("\(key) contains NUL or another control character")
        }
        guard bytes.count <= maximumTempFileNameLength else {
            throw invalid("\(key) is longer than \(maximumTempFileNameLength) bytes")
        }
    }

    /// An optional text value with no control characters; empty counts as absent.
    private static func checkedText(_ value: String?, key: String) throws(TransferError) -> String? {
        guard let value, !value.isEmpty else { return nil }
        guard FieldText.hasNoControlCharacters(value) else {
            throw invalid("\(key) contains control characters")
        }
        return value
    }
}
