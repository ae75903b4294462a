import Foundation

extension ResumeData {
    /// A request as stored in resume data under `NSURLSessionResumeOriginalRequest` and
    /// `NSURLSessionResumeCurrentRequest`.
    ///
    /// Darwin stores an archived `NSURLRequest` (`NSKeyedArchiver` data) under these keys, which cannot be produced or
    /// read without Darwin's classes. Courier stores a dictionary instead:
    ///
    /// | Key               | Type         | Meaning                                              |
    /// |-------------------|--------------|------------------------------------------------------|
    /// | `url`             | `string`     | The absolute `http` or `https` URL.                   |
    /// | `method`          | `string`     | The request method, an HTTP token such as `GET`.      |
    /// | `headers`         | `dict`       | Header field names to values, both strings.           |
    /// | `timeoutInterval` | `real`       | The request timeout in seconds, finite and not negative. |
    /// | `httpShouldHandleCookies` | `bool` | Present only when `false`: the request neither sends nor stores cookies. |
    ///
    /// The body is not stored: only `GET` downloads produce resume data.
    public struct Request: Hashable, Sendable {
        /// The request URL: absolute, `http` or `https`, with a host.
        public let url: URL
        /// The request method.
        public let method: String
        /// The request's header fields.
        public let headers: [String: String]
        /// The request timeout in seconds.
        public let timeoutInterval: TimeInterval
        /// The request's `httpShouldHandleCookies`: a download that must not send or store the session's cookies
        /// (a third-party host) must not start doing so when it is resumed.
        public let httpShouldHandleCookies: Bool

        /// Creates a stored request, checking that it is safe to send again.
        ///
        /// - Parameters:
        ///   - url: An absolute `http` or `https` URL with a host.
        ///   - method: An HTTP method token.
        ///   - headers: Header fields whose names are tokens and whose values have no control characters.
        ///   - timeoutInterval: A finite, non-negative number of seconds.
        ///   - httpShouldHandleCookies: Whether the request sends and stores cookies.
        /// - Throws: ``TransferError`` with code `cannotDecodeRawData` when a value is invalid.
        public init(
            url: URL,
            method: String = "GET",
            headers: [String: String] = [:],
            timeoutInterval: TimeInterval = 60,
            httpShouldHandleCookies: Bool = true
        ) throws(TransferError) {
            try self.init(
                url: url, method: method, headers: headers, timeoutInterval: timeoutInterval,
                httpShouldHandleCookies: httpShouldHandleCookies, key: "request")
        }

        /// Creates a stored request, naming `key` in errors.
        init(
            url: URL,
            method: String,
            headers: [String: String],
            timeoutInterval: TimeInterval,
            httpShouldHandleCookies: Bool = true,
            key: String
        ) throws(TransferError) {
            try ResumeData.checkHTTPURL(url, key: "\(key).url")
            guard Token.isToken(method) else {
                throw ResumeData.invalid("\(key).method is not an HTTP method token")
            }
            for (name, value) in headers {
                guard Token.isToken(name) else {
                    throw ResumeData.invalid("\(key).headers has a name that is not an HTTP token")
                }
                guard FieldText.hasNoControlCharacters(value) else {
                    throw ResumeData.invalid("\(key).headers has a value with control characters")
                }
            }
            guard timeoutInterval.isFinite, timeoutInterval >= 0 else {
                throw ResumeData.invalid("\(key).timeoutInterval is not a finite, non-negative number")
            }
            self.url = url.absoluteURL
            self.method = method
            self.headers = headers
            self.timeoutInterval = timeoutInterval
            self.httpShouldHandleCookies = httpShouldHandleCookies
        }

        /// Creates a stored request from its archived form.
        init(archive: ResumeDataArchive.Request, key: String) throws(TransferError) {
            guard let url = URL(string: archive.url) else {
                throw ResumeData.invalid("\(key).url is not a URL")
            }
            try self.init(
                url: url,
                method: archive.method,
                headers: archive.headers,
                timeoutInterval: archive.timeoutInterval,
                httpShouldHandleCookies: archive.httpShouldHandleCookies ?? true,
                key: key
            )
        }

        /// The archived form.
        var archive: ResumeDataArchive.Request {
            .init(
                url: url.absoluteString, method: method, headers: headers, timeoutInterval: timeoutInterval,
                httpShouldHandleCookies: httpShouldHandleCookies ? nil : false)
        }
    }
}
