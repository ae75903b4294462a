import CourierHTTP
import Foundation

/// The metadata associated with the response to a URL load request, independent of protocol and URL scheme.
///
/// Responses are immutable; ``copy(with:)`` returns the receiver.
open class URLResponse: NSObject, NSCopying, @unchecked Sendable {
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
}

/// The value of ``URLResponse/expectedContentLength`` when the length of the content is unknown.
public let NSURLResponseUnknownLength: Int64 = -1
