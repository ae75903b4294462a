import Courier
import Foundation
import Testing

@Suite("Response and credential archiving and equality")
struct ResponseCodingTests {
    private static let url = URL(string: "https://example.com/files/report.pdf")!

    private static func roundTrip<T: NSObject & NSSecureCoding>(_ object: T) throws -> T? {
        let data = try NSKeyedArchiver.archivedData(withRootObject: object, requiringSecureCoding: true)
        return try NSKeyedUnarchiver.unarchivedObject(ofClass: T.self, from: data)
    }

    @Test("URLResponse archives, and equality compares contents")
    func urlResponse() throws {
        let response = URLResponse(
            url: Self.url, mimeType: "application/pdf", expectedContentLength: 42, textEncodingName: "utf-8")
        let decoded = try #require(try Self.roundTrip(response))
        #expect(decoded !== response)
        #expect(decoded.url == Self.url && decoded.mimeType == "application/pdf")
        #expect(decoded.expectedContentLength == 42 && decoded.textEncodingName == "utf-8")
        #expect(decoded.isEqual(response) && response.isEqual(decoded))
        #expect(decoded.hash == response.hash)
        let other = URLResponse(url: Self.url, mimeType: "text/plain", expectedContentLength: 42, textEncodingName: nil)
        #expect(!other.isEqual(response))
        #expect(response.copy() as AnyObject === response)
        #expect(URLResponse.supportsSecureCoding)
    }

    @Test("HTTPURLResponse archives status, ordered headers and version; equality sees them")
    func httpResponse() throws {
        let response = try #require(
            HTTPURLResponse(
                url: Self.url, statusCode: 404, httpVersion: "HTTP/1.1",
                headerFields: ["Content-Type": "text/html; charset=utf-8", "Content-Length": "12"]))
        let decoded = try #require(try Self.roundTrip(response))
        #expect(decoded.statusCode == 404)
        #expect(decoded.value(forHTTPHeaderField: "content-type") == "text/html; charset=utf-8")
        #expect(decoded.mimeType == "text/html" && decoded.textEncodingName == "utf-8")
        #expect(decoded.expectedContentLength == 12)
        #expect(decoded.isEqual(response) && decoded.hash == response.hash)
        let ok = try #require(
            HTTPURLResponse(
                url: Self.url, statusCode: 200, httpVersion: "HTTP/1.1",
                headerFields: ["Content-Type": "text/html; charset=utf-8", "Content-Length": "12"]))
        #expect(!ok.isEqual(response))
        let plain = URLResponse(
            url: Self.url, mimeType: "text/html", expectedContentLength: 12, textEncodingName: "utf-8")
        #expect(!plain.isEqual(response) && !response.isEqual(plain))
        #expect(response.description.contains("Status Code: 404"))
        #expect(response.description.contains("\"Content-Length\" = \"12\";"))
    }

    @Test("init(coder:) returns nil for an archive without the values, instead of trapping")
    func invalidArchives() throws {
        let archiver = NSKeyedArchiver(requiringSecureCoding: true)
        archiver.encode(1, forKey: "unrelated")
        archiver.finishEncoding()
        let unarchiver = try NSKeyedUnarchiver(forReadingFrom: archiver.encodedData)
        unarchiver.decodingFailurePolicy = .setErrorAndReturn
        #expect(URLResponse(coder: unarchiver) == nil)
        #expect(HTTPURLResponse(coder: unarchiver) == nil)
        #expect(URLCredential(coder: unarchiver) == nil)
        #expect(NSURLRequest(coder: unarchiver) == nil)
        #expect(NSMutableURLRequest(coder: unarchiver) == nil)
        #expect((try? NSKeyedUnarchiver.unarchivedObject(ofClass: URLResponse.self, from: Data([1, 2, 3]))) == nil)
    }

    @Test("CachedURLResponse: init(response:data:) defaults, value equality and hash")
    func cachedResponse() {
        let response = URLResponse(url: Self.url, mimeType: nil, expectedContentLength: 3, textEncodingName: nil)
        let same = URLResponse(url: Self.url, mimeType: nil, expectedContentLength: 3, textEncodingName: nil)
        let a = CachedURLResponse(response: response, data: Data([1, 2, 3]))
        #expect(a.userInfo == nil && a.storagePolicy == .allowed)
        let b = CachedURLResponse(response: same, data: Data([1, 2, 3]))
        #expect(a.isEqual(b) && b.isEqual(a) && a.hash == b.hash)
        #expect(!a.isEqual(CachedURLResponse(response: same, data: Data([9]))))
        #expect(!a.isEqual(CachedURLResponse(response: same, data: Data([1, 2, 3]), storagePolicy: .notAllowed)))
        #expect(a.copy() as AnyObject === a)
    }

    @Test("URLCredential archives user, password and persistence; a trust credential fails to decode")
    func credential() throws {
        let credential = URLCredential(user: "ann", password: "s3cret", persistence: .permanent)
        let decoded = try #require(try Self.roundTrip(credential))
        #expect(decoded.user == "ann" && decoded.password == "s3cret" && decoded.persistence == .permanent)
        #expect(decoded.isEqual(credential))
        #expect(URLCredential.supportsSecureCoding)
        #expect(credential.copy() as AnyObject === credential)

        let trust = URLCredential(trust: SecTrust(certificates: [], host: "example.com"))
        let archive = try NSKeyedArchiver.archivedData(withRootObject: trust, requiringSecureCoding: true)
        #expect((try? NSKeyedUnarchiver.unarchivedObject(ofClass: URLCredential.self, from: archive)) == nil)
    }

    @Test("Copies: a task is itself, a configuration is independent, a protection space is itself")
    func copies() {
        let configuration = URLSessionConfiguration.default
        let copy = configuration.copy() as? URLSessionConfiguration
        copy?.timeoutIntervalForRequest = 3
        #expect(copy !== configuration && configuration.timeoutIntervalForRequest == 60)
        let space = URLProtectionSpace(
            host: "example.com", port: 443, protocol: NSURLProtectionSpaceHTTPS, realm: "api",
            authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
        #expect(space.copy() as AnyObject === space)
        #expect(space.description.contains("Host:example.com"))
        #expect(space.description.contains("Realm:api") && space.description.contains("Port:443"))
        let task = URLSessionTask()
        #expect(task.copy() as AnyObject === task)
        #expect(task.copy(with: nil) as AnyObject === task)
    }
}
