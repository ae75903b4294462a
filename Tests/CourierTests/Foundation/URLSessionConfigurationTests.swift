import CourierHTTP
import Foundation
import Testing

@testable import Courier

@Suite("URLSessionConfiguration")
struct URLSessionConfigurationTests {
    /// The header fields a session made with `configuration` gives `request` (as a task's current request has them).
    private func sentFields(_ configuration: URLSessionConfiguration, _ request: URLRequest) -> HeaderFieldDictionary {
        (StageSettings(configuration).addingAdditionalHeaders(to: request) ?? request).headerFields
    }

    @Test("Default values match Apple's")
    func defaults() {
        let configuration = URLSessionConfiguration.default
        #expect(configuration.identifier == nil)
        #expect(configuration.requestCachePolicy == .useProtocolCachePolicy)
        #expect(configuration.timeoutIntervalForRequest == 60)
        #expect(configuration.timeoutIntervalForResource == 604_800)
        #expect(configuration.networkServiceType == .default)
        #expect(configuration.allowsCellularAccess)
        #expect(configuration.allowsExpensiveNetworkAccess)
        #expect(configuration.allowsConstrainedNetworkAccess)
        #expect(!configuration.requiresDNSSECValidation)
        #expect(!configuration.waitsForConnectivity)
        #expect(!configuration.isDiscretionary)
        #expect(configuration.sharedContainerIdentifier == nil)
        #expect(!configuration.sessionSendsLaunchEvents)
        #expect(configuration.connectionProxyDictionary == nil)
        #expect(configuration.tlsMinimumSupportedProtocolVersion == .TLSv12)
        #expect(configuration.tlsMaximumSupportedProtocolVersion == .TLSv13)
        #expect(!configuration.httpShouldUsePipelining)
        #expect(configuration.httpShouldSetCookies)
        #expect(configuration.httpCookieAcceptPolicy == .onlyFromMainDocumentDomain)
        #expect(configuration.httpAdditionalHeaders == nil)
        #expect(configuration.httpMaximumConnectionsPerHost == 6)
        #expect(configuration.httpCookieStorage === HTTPCookieStorage.shared)
        #expect(configuration.urlCredentialStorage === URLCredentialStorage.shared)
        #expect(configuration.urlCache === URLCache.shared)
        #expect(!configuration.shouldUseExtendedBackgroundIdleMode)
        #expect(configuration.protocolClasses?.isEmpty == true)
        #expect(configuration.multipathServiceType == .none)
        #expect(configuration.usesClassicLoadingMode)
    }

    @Test("Each access returns a new object")
    func newInstances() {
        #expect(URLSessionConfiguration.default !== URLSessionConfiguration.default)
        #expect(URLSessionConfiguration.ephemeral !== URLSessionConfiguration.ephemeral)
        let first = URLSessionConfiguration.default
        first.timeoutIntervalForRequest = 1
        #expect(URLSessionConfiguration.default.timeoutIntervalForRequest == 60)
    }

    @Test("Ephemeral configurations get storages of their own")
    func ephemeral() throws {
        let configuration = URLSessionConfiguration.ephemeral
        let other = URLSessionConfiguration.ephemeral
        let cookies = try #require(configuration.httpCookieStorage)
        let credentials = try #require(configuration.urlCredentialStorage)
        let cache = try #require(configuration.urlCache)
        #expect(cookies !== HTTPCookieStorage.shared)
        #expect(credentials !== URLCredentialStorage.shared)
        #expect(cache !== URLCache.shared)
        #expect(cookies !== other.httpCookieStorage)
        #expect(cache.diskCapacity == 0)
        #expect(configuration.identifier == nil)
    }

    @Test("Background configurations record their identifier")
    func background() {
        let configuration = URLSessionConfiguration.background(withIdentifier: "com.example.bg")
        #expect(configuration.identifier == "com.example.bg")
        #expect(configuration.sessionSendsLaunchEvents)
        #expect(configuration.httpCookieStorage === HTTPCookieStorage.shared)
        // Apple: "For background sessions, the default value is nil" (it was URLCache.shared, which resetting the
        // background session then emptied for the app's other sessions).
        #expect(configuration.urlCache == nil)
    }

    @Test("Mutating a copy leaves the original unchanged")
    func copyIndependence() throws {
        let original = URLSessionConfiguration.background(withIdentifier: "id")
        original.httpAdditionalHeaders = ["X-A": "1"]
        original.timeoutIntervalForRequest = 10
        let copy = try #require(original.copy() as? URLSessionConfiguration)
        #expect(copy !== original)
        #expect(copy.identifier == "id")
        #expect(copy.timeoutIntervalForRequest == 10)
        #expect(copy.httpAdditionalHeaders?["X-A"] as? String == "1")

        copy.timeoutIntervalForRequest = 20
        copy.httpAdditionalHeaders?["X-B"] = "2"
        copy.httpCookieAcceptPolicy = .never
        copy.tlsMinimumSupportedProtocolVersion = .TLSv13
        copy.urlCache = URLCache.shared
        #expect(original.timeoutIntervalForRequest == 10)
        #expect(original.httpAdditionalHeaders?.count == 1)
        #expect(original.httpCookieAcceptPolicy == .onlyFromMainDocumentDomain)
        #expect(original.tlsMinimumSupportedProtocolVersion == .TLSv12)
        #expect(original.urlCache == nil)
    }

    @Test(
        "TLS versions have their wire values",
        arguments: [
            (tls_protocol_version_t.TLSv10, UInt16(0x0301)), (.TLSv11, 0x0302), (.TLSv12, 0x0303), (.TLSv13, 0x0304),
            (.DTLSv10, 0xFEFF), (.DTLSv12, 0xFEFD),
        ])
    func tlsVersions(version: tls_protocol_version_t, raw: UInt16) {
        #expect(version.rawValue == raw)
        #expect(tls_protocol_version_t(rawValue: raw) == version)
    }

    @Test("Additional headers merge into requests without overriding them")
    func additionalHeaders() throws {
        let configuration = URLSessionConfiguration.default
        configuration.httpAdditionalHeaders = [
            "User-Agent": "Courier", "Accept": "text/html", "Authorization": "Basic x", "X-Count": 3,
        ]
        var request = URLRequest(url: try #require(URL(string: "https://example.com")))
        request.setValue("application/json", forHTTPHeaderField: "accept")
        let headers = sentFields(configuration, request)
        #expect(headers["Accept"] == "application/json")
        #expect(headers["User-Agent"] == "Courier")
        #expect(headers["X-Count"] == "3")
        #expect(headers["Authorization"] == "Basic x")
    }

    /// A Swift `Bool` in `httpAdditionalHeaders` is an `NSNumber` on Darwin, which sends `1` or `0`: Courier sent
    /// `true` or `false`, its Swift description, to the session's requests and to courierd alike.
    @Test("Bool header values are sent as 1 or 0, as Darwin sends them")
    func boolAdditionalHeaders() throws {
        let configuration = URLSessionConfiguration.default
        configuration.httpAdditionalHeaders = [
            "X-On": true, "X-Off": false, "X-Boxed": NSNumber(value: true), "X-Count": 3, "X-Text": "true",
        ]
        let headers = sentFields(configuration, URLRequest(url: try #require(URL(string: "https://a.example"))))
        #expect(headers["X-On"] == "1")
        #expect(headers["X-Off"] == "0")
        #expect(headers["X-Boxed"] == "1")
        #expect(headers["X-Count"] == "3")
        #expect(headers["X-Text"] == "true")
        let pairs = Dictionary(configuration.additionalHeaderPairs, uniquingKeysWith: { _, last in last })
        #expect(pairs["X-On"] == "1" && pairs["X-Off"] == "0")
    }
}
