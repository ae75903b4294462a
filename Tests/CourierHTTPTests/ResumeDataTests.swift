import CourierHTTP
import Foundation
import Testing

@Suite("ResumeData")
struct ResumeDataTests {
    // MARK: - Fixtures

    /// The plist keys and XML values of valid, Darwin-like resume data, written by hand.
    static let baseEntries: [(key: String, xml: String)] = [
        ("NSURLSessionResumeInfoVersion", "<integer>2</integer>"),
        ("NSURLSessionDownloadURL", "<string>https://files.example/big.iso?x=1&amp;y=2</string>"),
        ("NSURLSessionResumeBytesReceived", "<integer>1048576</integer>"),
        ("NSURLSessionResumeEntityTag", "<string>\"abc123\"</string>"),
        ("NSURLSessionResumeServerDownloadDate", "<string>Wed, 21 Oct 2015 07:28:00 GMT</string>"),
        ("NSURLSessionResumeInfoTempFileName", "<string>CFNetworkDownload_Ab12Cd.tmp</string>"),
        ("NSURLSessionResumeOriginalRequest", request(url: "http://files.example/big.iso")),
        ("NSURLSessionResumeCurrentRequest", request(url: "https://files.example/big.iso?x=1&amp;y=2")),
        ("NSURLSessionResumeByteRange", "<string>ignored by Courier</string>"),
    ]

    static func request(url: String, method: String = "GET", headers: String = "", timeout: String = "<real>60</real>")
        -> String
    {
        """
        <dict>
            <key>url</key><string>\(url)</string>
            <key>method</key><string>\(method)</string>
            <key>headers</key><dict>\(headers)</dict>
            <key>timeoutInterval</key>\(timeout)
        </dict>
        """
    }

    /// The base plist with `key` replaced by `xml`, or removed when `xml` is `nil`.
    static func plist(replacing key: String? = nil, with xml: String? = nil) -> Data {
        var body = ""
        var replaced = false
        for entry in baseEntries {
            if entry.key == key {
                replaced = true
                if let xml { body += "<key>\(entry.key)</key>\(xml)\n" }
            } else {
                body += "<key>\(entry.key)</key>\(entry.xml)\n"
            }
        }
        if let key, let xml, !replaced { body += "<key>\(key)</key>\(xml)\n" }
        let text = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">
            <dict>
            \(body)</dict>
            </plist>
            """
        return Data(text.utf8)
    }

    static func sample(bytesReceived: Int64 = 42, tempFileName: String = "courier-1.tmp") throws -> ResumeData {
        let url = try #require(URL(string: "https://cdn.example/file.bin"))
        let original = try ResumeData.Request(
            url: try #require(URL(string: "http://example.com/file.bin")),
            headers: ["Accept": "*/*", "X-Token": "a b\tc"],
            timeoutInterval: 30.5
        )
        let current = try ResumeData.Request(url: url, method: "GET", headers: [:], timeoutInterval: 30.5)
        return try ResumeData(
            downloadURL: url,
            bytesReceived: bytesReceived,
            entityTag: "\"v1\"",
            serverDownloadDate: "Tue, 15 Nov 1994 12:45:26 GMT",
            tempFileName: tempFileName,
            originalRequest: original,
            currentRequest: current
        )
    }

    static func expectInvalid(mentioning fragments: String..., performing body: () throws(TransferError) -> Void) {
        do {
            try body()
            Issue.record("expected an error mentioning \(fragments)")
        } catch {
            #expect(error.urlErrorCode == .cannotDecodeRawData)
            for fragment in fragments {
                #expect(error.detail.contains(fragment), "\(error.detail)")
            }
            #expect(error.detail.hasPrefix("Invalid resume data"), "\(error.detail)")
        }
    }

    // MARK: - Round trip and format

    @Test(
        "Round trip keeps every value",
        arguments: [
            (Int64(0), "a.tmp"),
            (Int64(42), "courier-1.tmp"),
            (Int64.max, String(repeating: "x", count: 255)),
            (Int64(7), "données é.tmp"),
        ])
    func roundTrip(bytesReceived: Int64, tempFileName: String) throws {
        let original = try Self.sample(bytesReceived: bytesReceived, tempFileName: tempFileName)
        let decoded = try ResumeData(decoding: try original.encoded())
        #expect(decoded == original)
    }

    @Test func roundTripWithoutValidators() throws {
        let url = try #require(URL(string: "http://example.com/a"))
        let request = try ResumeData.Request(url: url)
        let data = try ResumeData(
            downloadURL: url,
            bytesReceived: 1,
            entityTag: nil,
            serverDownloadDate: "",
            tempFileName: "t",
            originalRequest: request,
            currentRequest: request
        )
        #expect(data.serverDownloadDate == nil)
        let decoded = try ResumeData(decoding: try data.encoded())
        #expect(decoded == data)
        #expect(decoded.entityTag == nil)
    }

    @Test(arguments: [Int64(1_000), 0, -1])
    func theExpectedTotalLengthRoundTripsUnderCouriersOwnKey(length: Int64) throws {
        let url = try #require(URL(string: "http://example.com/a"))
        let request = try ResumeData.Request(url: url)
        let data = try ResumeData(
            downloadURL: url, bytesReceived: 1, entityTag: "\"e\"", serverDownloadDate: nil, tempFileName: "t",
            originalRequest: request, currentRequest: request, expectedTotalLength: length)
        let expected: Int64? = length >= 0 ? length : nil
        #expect(data.expectedTotalLength == expected)
        let encoded = try data.encoded()
        let decoded = try ResumeData(decoding: encoded)
        #expect(decoded.expectedTotalLength == expected)
        #expect(decoded.partialDownload.totalLength == expected)
        #expect(decoded.partialDownload.entityTag == "\"e\"")
        let plist = try #require(
            try PropertyListSerialization.propertyList(from: encoded, format: nil) as? [String: Any])
        #expect((plist["CourierResumeExpectedTotalLength"] != nil) == (expected != nil))
        // Data without the key (Darwin's, or an older Courier's) still decodes.
        #expect(try ResumeData(decoding: Self.plist()).expectedTotalLength == nil)
    }

    @Test func encodesAnXMLPlistWithDarwinKeys() throws {
        let encoded = try Self.sample().encoded()
        let text = String(decoding: encoded, as: UTF8.self)
        #expect(text.hasPrefix("<?xml"))
        let plist = try PropertyListSerialization.propertyList(from: encoded, format: nil)
        let dictionary = try #require(plist as? [String: Any])
        #expect(
            Set(dictionary.keys) == [
                "NSURLSessionResumeInfoVersion", "NSURLSessionDownloadURL", "NSURLSessionResumeBytesReceived",
                "NSURLSessionResumeEntityTag", "NSURLSessionResumeServerDownloadDate",
                "NSURLSessionResumeInfoTempFileName", "NSURLSessionResumeOriginalRequest",
                "NSURLSessionResumeCurrentRequest",
            ])
        #expect((dictionary["NSURLSessionResumeInfoVersion"] as? NSNumber)?.intValue == 2)
        #expect(dictionary["NSURLSessionDownloadURL"] as? String == "https://cdn.example/file.bin")
        #expect((dictionary["NSURLSessionResumeBytesReceived"] as? NSNumber)?.int64Value == 42)
        #expect(dictionary["NSURLSessionResumeInfoTempFileName"] as? String == "courier-1.tmp")
        let original = try #require(dictionary["NSURLSessionResumeOriginalRequest"] as? [String: Any])
        #expect(original["url"] as? String == "http://example.com/file.bin")
        #expect(original["method"] as? String == "GET")
        #expect(original["headers"] as? [String: String] == ["Accept": "*/*", "X-Token": "a b\tc"])
        #expect((original["timeoutInterval"] as? NSNumber)?.doubleValue == 30.5)
    }

    @Test func decodesAHandWrittenDarwinLikePlist() throws {
        let data = try ResumeData(decoding: Self.plist())
        #expect(data.downloadURL.absoluteString == "https://files.example/big.iso?x=1&y=2")
        #expect(data.bytesReceived == 1_048_576)
        #expect(data.entityTag == "\"abc123\"")
        #expect(data.serverDownloadDate == "Wed, 21 Oct 2015 07:28:00 GMT")
        #expect(data.tempFileName == "CFNetworkDownload_Ab12Cd.tmp")
        #expect(data.originalRequest.url.absoluteString == "http://files.example/big.iso")
        #expect(data.originalRequest.method == "GET")
        #expect(data.originalRequest.headers.isEmpty)
        #expect(data.originalRequest.timeoutInterval == 60)
        #expect(data.currentRequest.url.absoluteString == "https://files.example/big.iso?x=1&y=2")
    }

    @Test(
        "Decodes valid variations",
        arguments: [
            ("NSURLSessionResumeEntityTag", nil as String?, "nil"),
            ("NSURLSessionResumeServerDownloadDate", nil, "nil"),
            ("NSURLSessionResumeEntityTag", "<string>W/\"weak\"</string>", "W/\"weak\""),
            ("NSURLSessionResumeBytesReceived", "<integer>0</integer>", "0"),
            ("NSURLSessionResumeBytesReceived", "<integer>9223372036854775807</integer>", "9223372036854775807"),
            ("NSURLSessionDownloadURL", "<string>HTTP://EXAMPLE.COM/x</string>", "HTTP://EXAMPLE.COM/x"),
            ("NSURLSessionResumeInfoTempFileName", "<string>...</string>", "..."),
            ("NSURLSessionResumeInfoTempFileName", "<string>.hidden</string>", ".hidden"),
            (
                "NSURLSessionResumeCurrentRequest",
                request(
                    url: "https://a.example/", method: "HEAD",
                    headers: "<key>Accept</key><string>*/*</string>", timeout: "<integer>15</integer>"),
                "HEAD https://a.example/ 15.0 [\"Accept\": \"*/*\"]"
            ),
        ])
    func decodesVariations(key: String, xml: String?, expected: String) throws {
        let data = try ResumeData(decoding: Self.plist(replacing: key, with: xml))
        // The field the variation changed, as text.
        let field: String
        switch key {
        case "NSURLSessionResumeEntityTag": field = data.entityTag ?? "nil"
        case "NSURLSessionResumeServerDownloadDate": field = data.serverDownloadDate ?? "nil"
        case "NSURLSessionResumeBytesReceived": field = String(data.bytesReceived)
        case "NSURLSessionDownloadURL": field = data.downloadURL.absoluteString
        case "NSURLSessionResumeInfoTempFileName": field = data.tempFileName
        case "NSURLSessionResumeCurrentRequest":
            let current = data.currentRequest
            field = "\(current.method) \(current.url.absoluteString) \(current.timeoutInterval) \(current.headers)"
        default:
            Issue.record("no check for \(key)")
            return
        }
        #expect(field == expected)
    }

    // MARK: - Hostile input

    @Test(
        "Hostile temp file names are rejected",
        arguments: [
            ("../../etc/passwd", "path separator"),
            ("a/b", "path separator"),
            ("/etc/passwd", "path separator"),
            ("a\\b", "path separator"),
            ("..\\..\\x", "path separator"),
            ("/\u{301}x", "path separator"),
            ("..", "directory reference"),
            (".", "directory reference"),
            ("", "is empty"),
            ("a\u{0}b", "control character"),
            ("a\nb", "control character"),
            ("a\tb", "control character"),
            (String(repeating: "n", count: 300), "longer than 255"),
            (String(repeating: "é", count: 128), "longer than 255"),
        ])
    func hostileTempFileName(name: String, reason: String) throws {
        // A binary plist built from a dictionary, so that NUL and other characters XML cannot hold get through.
        let xmlBase = try PropertyListSerialization.propertyList(from: Self.plist(), format: nil)
        var dictionary = try #require(xmlBase as? [String: Any])
        dictionary["NSURLSessionResumeInfoTempFileName"] = name
        let data = try PropertyListSerialization.data(fromPropertyList: dictionary, format: .binary, options: 0)
        Self.expectInvalid(mentioning: "NSURLSessionResumeInfoTempFileName", reason) {
            () throws(TransferError) in _ = try ResumeData(decoding: data)
        }
    }

    @Test(
        "Hostile or malformed keys are rejected",
        arguments: [
            ("NSURLSessionResumeBytesReceived", "<integer>-1</integer>", "NSURLSessionResumeBytesReceived is negative"),
            (
                "NSURLSessionResumeBytesReceived", "<string>100</string>",
                "NSURLSessionResumeBytesReceived has the wrong type"
            ),
            ("NSURLSessionResumeBytesReceived", "<true/>", "NSURLSessionResumeBytesReceived has the wrong type"),
            (
                "NSURLSessionResumeBytesReceived", "<integer>99999999999999999999</integer>",
                "NSURLSessionResumeBytesReceived"
            ),
            ("NSURLSessionResumeBytesReceived", nil, "NSURLSessionResumeBytesReceived is missing"),
            ("NSURLSessionDownloadURL", nil, "NSURLSessionDownloadURL is missing"),
            (
                "NSURLSessionDownloadURL", "<string>ftp://files.example/a</string>",
                "NSURLSessionDownloadURL is not an http"
            ),
            (
                "NSURLSessionDownloadURL", "<string>file:///etc/passwd</string>",
                "NSURLSessionDownloadURL is not an http"
            ),
            ("NSURLSessionDownloadURL", "<string>/relative/path</string>", "NSURLSessionDownloadURL is not an http"),
            ("NSURLSessionDownloadURL", "<string>http:///nohost</string>", "NSURLSessionDownloadURL has no host"),
            ("NSURLSessionDownloadURL", "<integer>1</integer>", "NSURLSessionDownloadURL has the wrong type"),
            ("NSURLSessionResumeInfoTempFileName", nil, "NSURLSessionResumeInfoTempFileName is missing"),
            ("NSURLSessionResumeInfoTempFileName", "<array/>", "NSURLSessionResumeInfoTempFileName has the wrong type"),
            ("NSURLSessionResumeInfoVersion", "<integer>99</integer>", "NSURLSessionResumeInfoVersion is 99"),
            ("NSURLSessionResumeInfoVersion", "<integer>1</integer>", "NSURLSessionResumeInfoVersion is 1"),
            ("NSURLSessionResumeInfoVersion", nil, "NSURLSessionResumeInfoVersion is missing"),
            ("NSURLSessionResumeInfoVersion", "<string>2</string>", "NSURLSessionResumeInfoVersion has the wrong type"),
            ("NSURLSessionResumeEntityTag", "<integer>5</integer>", "NSURLSessionResumeEntityTag has the wrong type"),
            (
                "NSURLSessionResumeEntityTag", "<string>\"a\"&#13;&#10;X-Evil: 1</string>",
                "NSURLSessionResumeEntityTag contains control"
            ),
            (
                "NSURLSessionResumeServerDownloadDate", "<string>Wed&#10;Evil: 1</string>",
                "NSURLSessionResumeServerDownloadDate contains control"
            ),
            ("NSURLSessionResumeOriginalRequest", nil, "NSURLSessionResumeOriginalRequest is missing"),
            (
                "NSURLSessionResumeCurrentRequest", "<data>YnBsaXN0MDA=</data>",
                "NSURLSessionResumeCurrentRequest has the wrong type"
            ),
            (
                "NSURLSessionResumeCurrentRequest", request(url: "ftp://a.example/"),
                "NSURLSessionResumeCurrentRequest.url is not an http"
            ),
            (
                "NSURLSessionResumeCurrentRequest", request(url: "https://a.example/", method: "G T"),
                "NSURLSessionResumeCurrentRequest.method"
            ),
            (
                "NSURLSessionResumeCurrentRequest", request(url: "https://a.example/", method: ""),
                "NSURLSessionResumeCurrentRequest.method"
            ),
            (
                "NSURLSessionResumeCurrentRequest",
                request(url: "https://a.example/", headers: "<key>Bad Name</key><string>x</string>"),
                "NSURLSessionResumeCurrentRequest.headers has a name"
            ),
            (
                "NSURLSessionResumeCurrentRequest",
                request(url: "https://a.example/", headers: "<key>X-A</key><string>a&#13;&#10;Host: evil</string>"),
                "NSURLSessionResumeCurrentRequest.headers has a value"
            ),
            (
                "NSURLSessionResumeCurrentRequest",
                request(url: "https://a.example/", headers: "<key>X-A</key><integer>1</integer>"),
                "NSURLSessionResumeCurrentRequest.headers.X-A has the wrong type"
            ),
            (
                "NSURLSessionResumeOriginalRequest", request(url: "https://a.example/", timeout: "<real>-1</real>"),
                "NSURLSessionResumeOriginalRequest.timeoutInterval"
            ),
            (
                "NSURLSessionResumeOriginalRequest", request(url: "https://a.example/", timeout: "<string>60</string>"),
                "NSURLSessionResumeOriginalRequest.timeoutInterval has the wrong type"
            ),
        ])
    func hostileKey(key: String, xml: String?, reason: String) {
        let data = Self.plist(replacing: key, with: xml)
        Self.expectInvalid(mentioning: reason) { () throws(TransferError) in _ = try ResumeData(decoding: data) }
    }

    @Test(
        "Data that is not a resume data dictionary is rejected",
        arguments: [
            (Data([0xFF, 0xFE, 0x00, 0x13, 0x37]), "property list"),
            (Data(), "property list"),
            (Data("garbage".utf8), "not a property list dictionary"),
            (Data("bplist00".utf8), "property list"),
            (
                Data(
                    """
                    <?xml version="1.0" encoding="UTF-8"?>
                    <plist version="1.0"><array><string>NSURLSessionDownloadURL</string></array></plist>
                    """.utf8),
                "not a property list dictionary"
            ),
            (Data("<plist version=\"1.0\"><dict><key>a</key>".utf8), "property list"),
            (Data("<plist version=\"1.0\"><dict/></plist>".utf8), "NSURLSessionResumeInfoVersion is missing"),
        ])
    func notADictionary(data: Data, reason: String) {
        Self.expectInvalid(mentioning: reason) { () throws(TransferError) in _ = try ResumeData(decoding: data) }
    }

    @Test(
        "The initializer validates requests",
        arguments: [
            ("ftp://a.example/", "GET", ["A": "b"], 60.0, "request.url is not an http"),
            ("https://a.example/", "GE T", [:], 60.0, "request.method"),
            ("https://a.example/", "GET", ["Bad:Name": "b"], 60.0, "request.headers has a name"),
            ("https://a.example/", "GET", ["X": "a\r\nb"], 60.0, "request.headers has a value"),
            ("https://a.example/", "GET", ["X": "a\u{0}b"], 60.0, "request.headers has a value"),
            ("https://a.example/", "GET", [:], -1.0, "request.timeoutInterval"),
            ("https://a.example/", "GET", [:], Double.nan, "request.timeoutInterval"),
            ("https://a.example/", "GET", [:], Double.infinity, "request.timeoutInterval"),
        ])
    func invalidRequests(url: String, method: String, headers: [String: String], timeout: Double, reason: String)
        throws
    {
        let url = try #require(URL(string: url))
        Self.expectInvalid(mentioning: reason) { () throws(TransferError) in
            _ = try ResumeData.Request(url: url, method: method, headers: headers, timeoutInterval: timeout)
        }
    }

    // MARK: - Shapes the parser must not be given

    /// An XML property list whose body is `element` repeated `depth` times, never closed: Foundation's XML scanner
    /// recurses into each element before it finds the end of the data.
    static func nested(_ element: String, depth: Int) -> String {
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\">" + String(repeating: element, count: depth)
    }

    /// Nesting deep enough to overflow the stack of Foundation's recursive XML scanner (it crashed the process inside
    /// `ResumeData(decoding:)`), in UTF-8 and in UTF-16 (which Foundation converts before scanning), and data past the
    /// size bound, are refused before they are parsed. Each deep case stays under the size bound, so that it is the
    /// element count or the encoding that refuses it.
    @Test(
        "Deeply nested, oversized or UTF-16 data is refused without being parsed",
        arguments: [
            ("arrays", "more than 64"),
            ("dicts", "more than 64"),
            ("plists", "more than 64"),
            ("utf16-arrays", "not a UTF-8 or binary property list"),
            ("oversized", "larger than 1048576 bytes"),
        ])
    func hostileShape(kind: String, reason: String) throws {
        let data: Data
        switch kind {
        case "arrays":
            data = Data(Self.nested("<array>", depth: 140_000).utf8)
        case "dicts":
            data = Data(Self.nested("<dict><key>k</key>", depth: 55_000).utf8)
        case "plists":
            data = Data(Self.nested("<plist>", depth: 140_000).utf8)
        case "utf16-arrays":
            data = try #require(Self.nested("<array>", depth: 70_000).data(using: .utf16))
            #expect(data.count <= 1 << 20)
        default:
            // Valid resume data, padded with a comment past the bound.
            let padding = "<!--" + String(repeating: " ", count: 1 << 20) + "-->"
            let text = String(decoding: Self.plist(), as: UTF8.self)
            data = Data(text.replacingOccurrences(of: "<plist version", with: padding + "<plist version").utf8)
        }
        Self.expectInvalid(mentioning: reason) { () throws(TransferError) in _ = try ResumeData(decoding: data) }
    }

    /// The bound leaves room for keys Courier does not know: a few containers under them still decode.
    @Test func unknownContainerKeysStillDecode() throws {
        let extra = "<array><dict><key>a</key><array/></dict><array><string>x</string></array></array>"
        let data = Self.plist(replacing: "NSURLSessionResumeSomethingNew", with: extra)
        let decoded = try ResumeData(decoding: data)
        #expect(decoded.tempFileName == "CFNetworkDownload_Ab12Cd.tmp")
    }

    // MARK: - Partial file size

    @Test(
        "validate(partialFileSize:)",
        arguments: [
            (Int64(100), Int64(99), false),
            (100, 0, false),
            (1, -1, false),
            (100, 100, true),
            (100, 150, true),
            (0, 0, true),
            (0, 10, true),
        ])
    func partialFileSize(bytesReceived: Int64, fileSize: Int64, valid: Bool) throws {
        let data = try Self.sample(bytesReceived: bytesReceived)
        if valid {
            #expect(throws: Never.self) { try data.validate(partialFileSize: fileSize) }
        } else {
            Self.expectInvalid(mentioning: "partial file") { () throws(TransferError) in
                try data.validate(partialFileSize: fileSize)
            }
        }
    }
}
