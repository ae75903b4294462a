import CourierHTTP
import Testing

@Suite("Resumability")
struct ResumabilityTests {
    static let date = "Wed, 21 Oct 2015 07:28:00 GMT"
    /// A `Date` a minute after ``date``: ``date`` is then a strong validator (RFC 9110 §8.8.2.2).
    static let sent = "Wed, 21 Oct 2015 07:29:00 GMT"
    static let nextDay = "Thu, 22 Oct 2015 07:28:00 GMT"

    typealias Headers = [String: String]

    static let resumableCases: [(String, Int, Headers, Int64, String?, String?)] = [
        ("GET", 200, ["Accept-Ranges": "bytes", "ETag": "\"v1\""], 1, "\"v1\"", nil),
        ("GET", 200, ["accept-ranges": "BYTES", "etag": "\"v1\""], 10, "\"v1\"", nil),
        ("GET", 200, ["Accept-Ranges": "bytes", "Last-Modified": date, "Date": sent], 10, nil, date),
        ("GET", 200, ["Accept-Ranges": "bytes", "Last-Modified": date, "Date": nextDay], 10, nil, date),
        ("GET", 200, ["Accept-Ranges": "bytes", "ETag": "\"v1\"", "Last-Modified": date], 10, "\"v1\"", date),
        ("GET", 200, ["Accept-Ranges": "bytes", "ETag": " ", "Last-Modified": date, "Date": sent], 10, nil, date),
        ("GET", 200, ["Accept-Ranges": "other, bytes", "ETag": "\"v1\""], 10, "\"v1\"", nil),
        ("GET", 200, ["Accept-Ranges": " bytes ", "ETag": " \"v1\" "], 10, "\"v1\"", nil),
        ("GET", 206, ["ETag": "\"v1\""], 10, "\"v1\"", nil),
        ("GET", 206, ["Accept-Ranges": "bytes", "Last-Modified": date, "Date": sent], 10, nil, date),
        ("GET", 200, ["Accept-Ranges": "bytes", "ETag": "\"v1\"", "Content-Encoding": "identity"], 10, "\"v1\"", nil),
        ("GET", 200, ["Accept-Ranges": "bytes", "ETag": "\"v1\""], Int64.max, "\"v1\"", nil),
    ]

    @Test("Resumable downloads", arguments: resumableCases)
    func resumable(
        method: String,
        status: Int,
        headers: [String: String],
        bytesReceived: Int64,
        entityTag: String?,
        lastModified: String?
    ) throws {
        let fields = HeaderFieldDictionary(headers)
        let result = try #require(
            Resumability(
                method: method, rangeRequested: false, status: status, responseHeaders: fields,
                bytesReceived: bytesReceived))
        #expect(result.entityTag == entityTag)
        #expect(result.lastModified == lastModified)
        let viaClosure = Resumability(
            method: method, rangeRequested: false, status: status, responseHeader: { fields[$0] },
            bytesReceived: bytesReceived)
        #expect(viaClosure == result)
    }

    static let notResumableCases: [(String, Int, Headers, Int64)] = [
        ("POST", 200, ["Accept-Ranges": "bytes", "ETag": "\"v1\""], 10),
        ("HEAD", 200, ["Accept-Ranges": "bytes", "ETag": "\"v1\""], 10),
        ("get", 200, ["Accept-Ranges": "bytes", "ETag": "\"v1\""], 10),
        ("GET", 201, ["Accept-Ranges": "bytes", "ETag": "\"v1\""], 10),
        ("GET", 304, ["Accept-Ranges": "bytes", "ETag": "\"v1\""], 10),
        ("GET", 404, ["Accept-Ranges": "bytes", "ETag": "\"v1\""], 10),
        ("GET", 500, ["Accept-Ranges": "bytes", "ETag": "\"v1\""], 10),
        ("GET", 200, ["Accept-Ranges": "bytes"], 10),
        ("GET", 200, ["Accept-Ranges": "bytes", "ETag": "W/\"v1\""], 10),
        ("GET", 200, ["Accept-Ranges": "bytes", "ETag": "v1"], 10),
        ("GET", 200, ["Accept-Ranges": "bytes", "ETag": "\"v1\r\nX: 1\""], 10),
        ("GET", 200, ["Accept-Ranges": "bytes", "Last-Modified": "  "], 10),
        // A `Last-Modified` that is not a strong validator (RFC 9110 §8.8.2.2): no `Date`, a `Date` less than 60
        // seconds after it (two versions written in the same second share it), or dates that do not parse.
        ("GET", 200, ["Accept-Ranges": "bytes", "Last-Modified": date], 10),
        ("GET", 200, ["Accept-Ranges": "bytes", "Last-Modified": date, "Date": date], 10),
        ("GET", 200, ["Accept-Ranges": "bytes", "Last-Modified": date, "Date": "Wed, 21 Oct 2015 07:28:59 GMT"], 10),
        ("GET", 200, ["Accept-Ranges": "bytes", "Last-Modified": sent, "Date": date], 10),
        ("GET", 200, ["Accept-Ranges": "bytes", "Last-Modified": date, "Date": "soon"], 10),
        ("GET", 200, ["Accept-Ranges": "bytes", "Last-Modified": "yesterday", "Date": sent], 10),
        // A weak or malformed entity tag rules the date out (RFC 9110 §13.1.5).
        ("GET", 200, ["Accept-Ranges": "bytes", "ETag": "W/\"v1\"", "Last-Modified": date, "Date": sent], 10),
        ("GET", 200, ["Accept-Ranges": "bytes", "ETag": "garbage", "Last-Modified": date, "Date": sent], 10),
        ("GET", 200, ["Accept-Ranges": "bytes", "Last-Modified": "Wed\r\nX: 1"], 10),
        ("GET", 200, ["ETag": "\"v1\""], 10),
        ("GET", 200, ["Accept-Ranges": "none", "ETag": "\"v1\""], 10),
        ("GET", 200, ["Accept-Ranges": "bytes, none", "ETag": "\"v1\""], 10),
        ("GET", 206, ["Accept-Ranges": "none", "ETag": "\"v1\""], 10),
        ("GET", 200, ["Accept-Ranges": "bytesx", "ETag": "\"v1\""], 10),
        ("GET", 200, ["Accept-Ranges": "bytes", "ETag": "\"v1\"", "Content-Encoding": "gzip"], 10),
        ("GET", 206, ["ETag": "\"v1\"", "Content-Encoding": "br"], 10),
        ("GET", 200, ["Accept-Ranges": "bytes", "ETag": "\"v1\""], 0),
        ("GET", 200, ["Accept-Ranges": "bytes", "ETag": "\"v1\""], -1),
    ]

    @Test("Downloads that cannot be resumed", arguments: notResumableCases)
    func notResumable(method: String, status: Int, headers: [String: String], bytesReceived: Int64) {
        let fields = HeaderFieldDictionary(headers)
        #expect(
            Resumability(
                method: method, rangeRequested: false, status: status, responseHeaders: fields,
                bytesReceived: bytesReceived) == nil)
        #expect(
            Resumability(
                method: method, rangeRequested: false, status: status, responseHeader: { fields[$0] },
                bytesReceived: bytesReceived)
                == nil)
    }

    /// The partial file of a range the app asked for does not start at the representation's first byte, or ends
    /// before its last: continuing it from its length would splice it with bytes the app never asked for.
    @Test("A range the app asked for is never resumed", arguments: [200, 206])
    func appRanges(status: Int) {
        let fields: HeaderFieldDictionary = ["Accept-Ranges": "bytes", "ETag": "\"v1\""]
        #expect(
            Resumability(
                method: "GET", rangeRequested: false, status: status, responseHeaders: fields, bytesReceived: 10)
                != nil)
        #expect(
            Resumability(
                method: "GET", rangeRequested: true, status: status, responseHeaders: fields, bytesReceived: 10)
                == nil)
        #expect(
            Resumability(
                method: "GET", rangeRequested: true, status: status, responseHeader: { fields[$0] }, bytesReceived: 10)
                == nil)
    }

    @Test func validatorsFeedTheResumeRequest() throws {
        let fields: HeaderFieldDictionary = [
            "Accept-Ranges": "bytes", "Last-Modified": Self.date, "Date": Self.sent,
        ]
        let result = try #require(
            Resumability(method: "GET", rangeRequested: false, status: 200, responseHeaders: fields, bytesReceived: 5))
        let request = ResumeRequestHeaders.fields(
            resumingAt: 5, entityTag: result.entityTag, lastModified: result.lastModified)
        #expect(request?["If-Range"] == Self.date)
        #expect(request?["Range"] == "bytes=5-")
    }
}
