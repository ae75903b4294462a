import Courier
import Foundation
import Testing

@Suite("URLRequest")
struct URLRequestTests {
    private let url = URL(string: "https://example.com/a")!

    @Test("Defaults match Apple's")
    func defaults() {
        let request = URLRequest(url: url)
        #expect(request.url == url)
        #expect(request.cachePolicy == .useProtocolCachePolicy)
        #expect(request.timeoutInterval == 60)
        #expect(request.httpMethod == "GET")
        #expect(request.allHTTPHeaderFields == nil)
        #expect(request.httpBody == nil)
        #expect(request.httpBodyStream == nil)
        #expect(request.httpShouldHandleCookies)
        #expect(!request.httpShouldUsePipelining)
        #expect(request.mainDocumentURL == nil)
        #expect(request.networkServiceType == .default)
        #expect(request.allowsCellularAccess)
        #expect(request.allowsExpensiveNetworkAccess)
        #expect(request.allowsConstrainedNetworkAccess)
        #expect(!request.assumesHTTP3Capable)
        #expect(!request.requiresDNSSECValidation)
        #expect(request.attribution == .developer)
        #expect(request.description == "https://example.com/a")
    }

    @Test("Initialiser arguments are kept")
    func initArguments() {
        let request = URLRequest(url: url, cachePolicy: .returnCacheDataDontLoad, timeoutInterval: 5)
        #expect(request.cachePolicy == .returnCacheDataDontLoad)
        #expect(request.timeoutInterval == 5)
    }

    @Test(
        "Cache policy raw values match Apple's",
        arguments: [
            (URLRequest.CachePolicy.useProtocolCachePolicy, UInt(0)), (.reloadIgnoringLocalCacheData, 1),
            (.returnCacheDataElseLoad, 2), (.returnCacheDataDontLoad, 3), (.reloadIgnoringLocalAndRemoteCacheData, 4),
            (.reloadRevalidatingCacheData, 5), (.reloadIgnoringCacheData, 1),
        ])
    func cachePolicyRawValues(policy: URLRequest.CachePolicy, raw: UInt) {
        #expect(policy.rawValue == raw)
    }

    @Test(
        "Network service type raw values match Apple's",
        arguments: [
            (URLRequest.NetworkServiceType.default, UInt(0)), (.voip, 1), (.video, 2), (.background, 3), (.voice, 4),
            (.responsiveData, 6), (.avStreaming, 8), (.responsiveAV, 9), (.callSignaling, 11),
        ])
    func serviceTypeRawValues(type: URLRequest.NetworkServiceType, raw: UInt) {
        #expect(type.rawValue == raw)
    }

    @Test("Setting the method to nil restores GET; standard methods are upper-cased, others kept as given")
    func method() {
        var request = URLRequest(url: url)
        request.httpMethod = "post"
        #expect(request.httpMethod == "POST")
        request.httpMethod = "patch"
        #expect(request.httpMethod == "patch")
        request.httpMethod = nil
        #expect(request.httpMethod == "GET")
    }

    @Test("Header names are case-insensitive", arguments: ["Content-Type", "content-type", "CONTENT-TYPE"])
    func caseInsensitiveHeaders(name: String) {
        var request = URLRequest(url: url)
        request.setValue("text/plain", forHTTPHeaderField: "Content-Type")
        #expect(request.value(forHTTPHeaderField: name) == "text/plain")
        request.setValue("application/json", forHTTPHeaderField: name)
        #expect(request.allHTTPHeaderFields == ["Content-Type": "application/json"])
        request.setValue(nil, forHTTPHeaderField: name.lowercased())
        #expect(request.allHTTPHeaderFields == nil)
    }

    @Test("addValue joins with a comma")
    func addValue() {
        var request = URLRequest(url: url)
        request.addValue("text/html", forHTTPHeaderField: "Accept")
        request.addValue("application/json", forHTTPHeaderField: "accept")
        #expect(request.value(forHTTPHeaderField: "Accept") == "text/html,application/json")
    }

    @Test("allHTTPHeaderFields replaces the fields and is nil when empty")
    func allHeaderFields() {
        var request = URLRequest(url: url)
        request.setValue("1", forHTTPHeaderField: "X-Old")
        request.allHTTPHeaderFields = ["X-New": "2"]
        #expect(request.value(forHTTPHeaderField: "x-old") == nil)
        #expect(request.value(forHTTPHeaderField: "x-new") == "2")
        request.allHTTPHeaderFields = [:]
        #expect(request.allHTTPHeaderFields == nil)
        request.allHTTPHeaderFields = ["A": "1"]
        request.allHTTPHeaderFields = nil
        #expect(request.allHTTPHeaderFields == nil)
    }

    @Test("Body and body stream exclude each other")
    func bodyExclusivity() {
        var request = URLRequest(url: url)
        request.httpBody = Data("hello".utf8)
        let stream = InputStream(data: Data("stream".utf8))
        request.httpBodyStream = stream
        #expect(request.httpBody == nil)
        #expect(request.httpBodyStream === stream)
        request.httpBody = Data("again".utf8)
        #expect(request.httpBodyStream == nil)
        #expect(request.httpBody == Data("again".utf8))
        request.httpBody = nil
        #expect(request.httpBody == nil && request.httpBodyStream == nil)
    }

    @Test("Equality and hashing cover every property, header names ignoring case")
    func hashable() {
        var lhs = URLRequest(url: url)
        var rhs = URLRequest(url: url)
        lhs.setValue("1", forHTTPHeaderField: "X-A")
        rhs.setValue("1", forHTTPHeaderField: "x-a")
        #expect(lhs == rhs)
        #expect(lhs.hashValue == rhs.hashValue)
        #expect(Set([lhs, rhs]).count == 1)

        rhs.timeoutInterval = 1
        #expect(lhs != rhs)
        rhs = lhs
        rhs.httpMethod = "POST"
        #expect(lhs != rhs)
        rhs = lhs
        rhs.httpBody = Data([1])
        #expect(lhs != rhs)
    }

    @Test("Body streams compare by identity")
    func streamIdentity() {
        let stream = InputStream(data: Data())
        var lhs = URLRequest(url: url)
        var rhs = URLRequest(url: url)
        lhs.httpBodyStream = stream
        rhs.httpBodyStream = stream
        #expect(lhs == rhs)
        rhs.httpBodyStream = InputStream(data: Data())
        #expect(lhs != rhs)
    }

    @Test("Copies are independent")
    func valueSemantics() {
        var original = URLRequest(url: url)
        original.setValue("1", forHTTPHeaderField: "X")
        var copy = original
        copy.setValue("2", forHTTPHeaderField: "X")
        copy.url = URL(string: "https://example.org")
        #expect(original.value(forHTTPHeaderField: "X") == "1")
        #expect(original.url == url)
    }

    /// Each way of changing a request, applied to a copy; the requests share their properties until one changes.
    private static let changes: [(name: String, change: @Sendable (inout URLRequest) -> Void)] = [
        ("url", { $0.url = URL(string: "https://example.org") }),
        ("cachePolicy", { $0.cachePolicy = .reloadIgnoringLocalCacheData }),
        ("timeoutInterval", { $0.timeoutInterval = 5 }),
        ("mainDocumentURL", { $0.mainDocumentURL = URL(string: "https://example.net") }),
        ("networkServiceType", { $0.networkServiceType = .background }),
        ("allowsCellularAccess", { $0.allowsCellularAccess = false }),
        ("allowsExpensiveNetworkAccess", { $0.allowsExpensiveNetworkAccess = false }),
        ("allowsConstrainedNetworkAccess", { $0.allowsConstrainedNetworkAccess = false }),
        ("assumesHTTP3Capable", { $0.assumesHTTP3Capable = true }),
        ("requiresDNSSECValidation", { $0.requiresDNSSECValidation = true }),
        ("attribution", { $0.attribution = .user }),
        ("httpShouldHandleCookies", { $0.httpShouldHandleCookies = false }),
        ("httpShouldUsePipelining", { $0.httpShouldUsePipelining = true }),
        ("httpMethod", { $0.httpMethod = "PUT" }),
        ("httpBody", { $0.httpBody = Data("body".utf8) }),
        ("httpBodyStream", { $0.httpBodyStream = InputStream(data: Data()) }),
        ("setValue", { $0.setValue("2", forHTTPHeaderField: "X") }),
        ("addValue", { $0.addValue("3", forHTTPHeaderField: "X") }),
        ("allHTTPHeaderFields", { $0.allHTTPHeaderFields = ["Y": "4"] }),
        ("URLProtocol.setProperty", { URLProtocol.setProperty("changed", forKey: "k", in: &$0) }),
        ("URLProtocol.removeProperty", { URLProtocol.removeProperty(forKey: "k", in: &$0) }),
    ]

    @Test("Changing any property of a copy leaves the original and its other copies alone", arguments: changes.indices)
    func everyChangeOfACopyIsItsOwn(index: Int) {
        var original = URLRequest(url: url)
        original.setValue("1", forHTTPHeaderField: "X")
        URLProtocol.setProperty("kept", forKey: "k", in: &original)
        let untouched = original
        var copy = original
        Self.changes[index].change(&copy)
        #expect(copy != original || Self.changes[index].name.hasPrefix("URLProtocol"), "\(Self.changes[index].name)")
        for request in [original, untouched] {
            #expect(request.url == url)
            #expect(request.cachePolicy == .useProtocolCachePolicy)
            #expect(request.timeoutInterval == 60)
            #expect(request.mainDocumentURL == nil)
            #expect(request.networkServiceType == .default)
            #expect(request.allowsCellularAccess && request.allowsExpensiveNetworkAccess)
            #expect(request.allowsConstrainedNetworkAccess)
            #expect(!request.assumesHTTP3Capable && !request.requiresDNSSECValidation)
            #expect(request.attribution == .developer)
            #expect(request.httpShouldHandleCookies && !request.httpShouldUsePipelining)
            #expect(request.httpMethod == "GET")
            #expect(request.httpBody == nil && request.httpBodyStream == nil)
            #expect(request.allHTTPHeaderFields == ["X": "1"])
            #expect(URLProtocol.property(forKey: "k", in: request) as? String == "kept")
        }
    }
}
