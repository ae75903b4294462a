import CourierHTTP
import Foundation

/// The metadata associated with the response to a URL load request, independent of protocol and URL scheme.
///
/// Responses are immutable; ``copy(with:)`` returns the receiver. Two responses are equal (``isEqual(_:)``) when
/// they are of the same class and have the same contents, and they archive with `NSKeyedArchiver` (secure coding).
open class URLResponse: NSObject, NSSecureCoding, NSCopying, @unchecked Sendable {
    private let storedURL: URL?
    private let storedMimeType: String?
    private let storedExpectedContentLength: Int64
    private let storedTextEncodingName: String?

    /// Creates a response.
    ///
    /// - Parameters:
    ///   - url: The URL of the response.
    ///   - mimeType: The MIME type of the response, such as `"text/html"`.
    ///   - length: The expected length of the content in bytes, or -1 if unknown.
    ///   - name: The name of the text encoding of the content, such as `"utf-8"`, or `nil`.
    public init(url: URL, mimeType: String?, expectedContentLength length: Int, textEncodingName name: String?) {
        storedURL = url
        storedMimeType = mimeType
        storedExpectedContentLength = Int64(length)
        storedTextEncodingName = name
        super.init()
    }

    /// Decodes a response archived with ``encode(with:)``.
    ///
    /// Fails (returns `nil`) when the coder is not a keyed coder or the archive holds no URL.
    ///
    /// - Parameter aDecoder: A keyed decoder, such as `NSKeyedUnarchiver`.
    public required init?(coder aDecoder: NSCoder) {
        guard aDecoder.allowsKeyedCoding, let url = aDecoder.decodeObject(of: NSURL.self, forKey: ArchiveKey.url)
        else { return nil }
        storedURL = url as URL
        storedMimeType = aDecoder.decodeObject(of: NSString.self, forKey: ArchiveKey.mimeType).map { $0 as String }
        storedExpectedContentLength = aDecoder.decodeInt64(forKey: ArchiveKey.expectedContentLength)
        storedTextEncodingName = aDecoder.decodeObject(of: NSString.self, forKey: ArchiveKey.textEncodingName)
            .map { $0 as String }
        super.init()
    }

    /// `true`: responses decode with `NSKeyedUnarchiver`'s secure coding.
    open class var supportsSecureCoding: Bool { true }

    /// Archives the response's URL, MIME type, expected content length and text encoding name with a keyed coder
    /// (a coder that does not allow keyed coding archives nothing, and ``init(coder:)`` then fails).
    ///
    /// - Parameter aCoder: A keyed coder, such as `NSKeyedArchiver`.
    open func encode(with aCoder: NSCoder) {
        guard aCoder.allowsKeyedCoding else { return }
        aCoder.encode(storedURL.flatMap { NSURL(string: $0.absoluteString) }, forKey: ArchiveKey.url)
        aCoder.encode(storedMimeType.map { NSString(string: $0) }, forKey: ArchiveKey.mimeType)
        aCoder.encode(storedExpectedContentLength, forKey: ArchiveKey.expectedContentLength)
        aCoder.encode(storedTextEncodingName.map { NSString(string: $0) }, forKey: ArchiveKey.textEncodingName)
    }

    /// The URL of the response.
    open var url: URL? { storedURL }

    /// The MIME type of the response, as determined by the originating source.
    open var mimeType: String? { storedMimeType }

    /// The expected length of the response's content in bytes, or -1 (`NSURLResponseUnknownLength`) when unknown.
    open var expectedContentLength: Int64 { storedExpectedContentLength }

    /// The name of the text encoding provided by the response's originating source, or `nil`.
    open var textEncodingName: String? { storedTextEncodingName }

    /// A suggested file name for the response data.
    ///
    /// The last path component of the URL, made safe to use as a file name (no `/` or `\`), or `"Unknown"` when the
    /// URL has no usable path. Unlike Apple platforms, Courier does not append an extension derived from the MIME
    /// type. HTTP responses first consult the `Content-Disposition` header.
    open var suggestedFilename: String? {
        storedURL.flatMap { url in
            url.lastPathComponent == "/" ? nil : ContentDisposition.sanitizedFilename(url.lastPathComponent)
        } ?? "Unknown"
    }

    /// Returns the receiver: responses are immutable.
    ///
    /// - Parameter zone: Ignored.
    open func copy(with zone: NSZone? = nil) -> Any {
        self
    }

    /// Returns the receiver: responses are immutable.
    open override func copy() -> Any {
        copy(with: nil)
    }

    /// Whether `object` is a response of the same class with the same contents: URL, MIME type, expected content
    /// length and text encoding name, and for an ``HTTPURLResponse`` also status code, header fields and HTTP
    /// version.
    ///
    /// - Parameter object: The object to compare with.
    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? URLResponse else { return false }
        return other === self || (type(of: other) == type(of: self) && hasSameContents(as: other))
    }

    /// A hash of the URL, MIME type, expected content length and text encoding name (consistent with
    /// ``isEqual(_:)``).
    open override var hash: Int {
        var hasher = Hasher()
        hasher.combine(url)
        hasher.combine(mimeType)
        hasher.combine(expectedContentLength)
        hasher.combine(textEncodingName)
        return hasher.finalize()
    }

    /// The body length a task expects for this response (`countOfBytesExpectedToReceive`, the download delegate's
    /// `totalBytesExpectedToWrite`): ``expectedContentLength``, except for a body the transport decodes (gzip,
    /// deflate, br), whose `Content-Length` counts the coded bytes while the task counts the decoded ones — unknown
    /// then, as on Darwin (see `ContentCoding.expectedDecodedLength`).
    var expectedBodyLength: Int64 {
        guard let http = self as? HTTPURLResponse, let coding = http.headerFields["Content-Encoding"] else {
            return expectedContentLength
        }
        return ContentCoding.expectedDecodedLength(contentLength: expectedContentLength, contentEncoding: [coding])
    }

    /// Whether `other` (of the receiver's class) has the same contents; subclasses add their own.
    func hasSameContents(as other: URLResponse) -> Bool {
        url == other.url && mimeType == other.mimeType && expectedContentLength == other.expectedContentLength
            && textEncodingName == other.textEncodingName
    }

    /// The keys of a response's archive (FoundationNetworking's, so that the contents read the same).
    enum ArchiveKey {
        static let url = "NS.url"
        static let mimeType = "NS.mimeType"
        static let expectedContentLength = "NS.expectedContentLength"
        static let textEncodingName = "NS.textEncodingName"
        static let statusCode = "NS.statusCode"
        static let headerFields = "courier.headerFields"
        static let httpVersion = "courier.httpVersion"
    }
}

/// The value of ``URLResponse/expectedContentLength`` when the length of the content is unknown.
public let NSURLResponseUnknownLength: Int64 = -1
