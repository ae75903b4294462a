import Courier
import Foundation
import Testing

@Suite("NSURLRequest and NSMutableURLRequest")
struct NSURLRequestTests {
    /// One property of a request: how to change it on a value, and whether a reference reads it back.
    struct Property: CustomStringConvertible, Sendable {
        let description: String
        let change: @Sendable (inout URLRequest) -> Void
        let changeMutable: @Sendable (NSMutableURLRequest) -> Void
        let readsSame: @Sendable (URLRequest, NSURLRequest) -> Bool
    }

    static let properties: [Property] = [
        Property(
            description: "url", change: { $0.url = URL(string: "https://other.example/x") },
            changeMutable: { $0.url = URL(string: "https://other.example/x") }, readsSame: { $0.url == $1.url }),
        Property(
            description: "mainDocumentURL", change: { $0.mainDocumentURL = URL(string: "https://main.example/") },
            changeMutable: { $0.mainDocumentURL = URL(string: "https://main.example/") },
            readsSame: { $0.mainDocumentURL == $1.mainDocumentURL }),
        Property(
            description: "cachePolicy", change: { $0.cachePolicy = .returnCacheDataDontLoad },
            changeMutable: { $0.cachePolicy = .returnCacheDataDontLoad },
            readsSame: { $0.cachePolicy == $1.cachePolicy }),
        Property(
            description: "timeoutInterval", change: { $0.timeoutInterval = 12.5 },
            changeMutable: { $0.timeoutInterval = 12.5 }, readsSame: { $0.timeoutInterval == $1.timeoutInterval }),
        Property(
            description: "httpMethod", change: { $0.httpMethod = "PATCH" }, changeMutable: { $0.httpMethod = "PATCH" },
            readsSame: { $0.httpMethod == $1.httpMethod }),
        Property(
            description: "headers", change: { $0.setValue("a", forHTTPHeaderField: "X-One") },
            changeMutable: { $0.setValue("a", forHTTPHeaderField: "X-One") },
            readsSame: {
                $0.allHTTPHeaderFields == $1.allHTTPHeaderFields
                    && $1.value(forHTTPHeaderField: "x-one") == $0.value(forHTTPHeaderField: "X-One")
            }),
        Property(
            description: "httpBody", change: { $0.httpBody = Data("body".utf8) },
            changeMutable: { $0.httpBody = Data("body".utf8) }, readsSame: { $0.httpBody == $1.httpBody }),
        Property(
            description: "networkServiceType", change: { $0.networkServiceType = .video },
            changeMutable: { $0.networkServiceType = .video },
            readsSame: { $0.networkServiceType == $1.networkServiceType }),
        Property(
            description: "allowsCellularAccess", change: { $0.allowsCellularAccess = false },
            changeMutable: { $0.allowsCellularAccess = false },
            readsSame: { $0.allowsCellularAccess == $1.allowsCellularAccess }),
        Property(
            description: "allowsExpensiveNetworkAccess", change: { $0.allowsExpensiveNetworkAccess = false },
            changeMutable: { $0.allowsExpensiveNetworkAccess = false },
            readsSame: { $0.allowsExpensiveNetworkAccess == $1.allowsExpensiveNetworkAccess }),
        Property(
            description: "allowsConstrainedNetworkAccess", change: { $0.allowsConstrainedNetworkAccess = false },
            changeMutable: { $0.allowsConstrainedNetworkAccess = false },
            readsSame: { $0.allowsConstrainedNetworkAccess == $1.allowsConstrainedNetworkAccess }),
        Property(
            description: "assumesHTTP3Capable", change: { $0.assumesHTTP3Capable = true },
            changeMutable: { $0.assumesHTTP3Capable = true },
            readsSame: { $0.assumesHTTP3Capable == $1.assumesHTTP3Capable }),
        Property(
            description: "requiresDNSSECValidation", change: { $0.requiresDNSSECValidation = true },
            changeMutable: { $0.requiresDNSSECValidation = true },
            readsSame: { $0.requiresDNSSECValidation == $1.requiresDNSSECValidation }),
        Property(
            description: "attribution", change: { $0.attribution = .user }, changeMutable: { $0.attribution = .user },
            readsSame: { $0.attribution == $1.attribution }),
        Property(
            description: "httpShouldHandleCookies", change: { $0.httpShouldHandleCookies = false },
            changeMutable: { $0.httpShouldHandleCookies = false },
            readsSame: { $0.httpShouldHandleCookies == $1.httpShouldHandleCookies }),
        Property(
            description: "httpShouldUsePipelining", change: { $0.httpShouldUsePipelining = true },
            changeMutable: { $0.httpShouldUsePipelining = true },
            readsSame: { $0.httpShouldUsePipelining == $1.httpShouldUsePipelining }),
    ]

    private static func base() -> URLRequest {
        URLRequest(url: URL(string: "https://example.com/a?b=c")!)
    }

    @Test("Each property survives URLRequest → NSURLRequest → URLRequest", arguments: properties)
    func bridgeRoundTrip(property: Property) {
        var request = Self.base()
        property.change(&request)
        #expect(request != Self.base())
        let reference = request._bridgeToObjectiveC()
        #expect(property.readsSame(request, reference))
        #expect(URLRequest._unconditionallyBridgeFromObjectiveC(reference) == request)
    }

    @Test("Each NSMutableURLRequest setter changes what bridges back", arguments: properties)
    func mutableSetter(property: Property) {
        let mutable = NSMutableURLRequest(url: URL(string: "https://example.com/a?b=c")!)
        property.changeMutable(mutable)
        var expected = Self.base()
        property.change(&expected)
        #expect(URLRequest._unconditionallyBridgeFromObjectiveC(mutable) == expected)
        #expect(property.readsSame(expected, mutable))
    }

    @Test("Each property survives a secure keyed archive", arguments: properties)
    func archiveRoundTrip(property: Property) throws {
        var request = Self.base()
        request.addValue("first", forHTTPHeaderField: "X-Order")
        property.change(&request)
        let archive = try NSKeyedArchiver.archivedData(
            withRootObject: request._bridgeToObjectiveC(), requiringSecureCoding: true)
        let decoded = try #require(try NSKeyedUnarchiver.unarchivedObject(ofClass: NSURLRequest.self, from: archive))
        #expect(URLRequest._unconditionallyBridgeFromObjectiveC(decoded) == request)
        #expect(decoded.isEqual(request._bridgeToObjectiveC()))
    }

    @Test("A mutable request archives and decodes as mutable; garbage decodes to nil")
    func mutableArchive() throws {
        let mutable = NSMutableURLRequest(url: URL(string: "https://example.com/")!)
        mutable.httpMethod = "PUT"
        let archive = try NSKeyedArchiver.archivedData(withRootObject: mutable, requiringSecureCoding: true)
        let decoded = try #require(
            try NSKeyedUnarchiver.unarchivedObject(ofClass: NSMutableURLRequest.self, from: archive))
        #expect(decoded.httpMethod == "PUT")
        decoded.httpMethod = "DELETE"
        #expect(mutable.httpMethod == "PUT")
        #expect((try? NSKeyedUnarchiver.unarchivedObject(ofClass: NSURLRequest.self, from: Data("junk".utf8))) == nil)
        #expect(NSURLRequest.supportsSecureCoding)
    }

    @Test("copy of an immutable request is itself; copies of mutable ones are independent snapshots")
    func copySemantics() throws {
        let immutable = NSURLRequest(url: URL(string: "https://example.com/")!)
        #expect(immutable.copy() as AnyObject === immutable)

        let mutable = NSMutableURLRequest(url: URL(string: "https://example.com/")!)
        mutable.setValue("1", forHTTPHeaderField: "X-A")
        let snapshot = try #require(mutable.copy() as? NSURLRequest)
        #expect(!(snapshot is NSMutableURLRequest))
        let second = try #require(mutable.mutableCopy() as? NSMutableURLRequest)
        let fromImmutable = try #require(immutable.mutableCopy() as? NSMutableURLRequest)
        mutable.setValue("2", forHTTPHeaderField: "X-A")
        mutable.addValue("3", forHTTPHeaderField: "X-A")
        second.httpBody = Data([1])
        fromImmutable.url = URL(string: "https://changed.example/")
        #expect(snapshot.value(forHTTPHeaderField: "X-A") == "1")
        #expect(second.value(forHTTPHeaderField: "X-A") == "1")
        #expect(mutable.value(forHTTPHeaderField: "x-a") == "2,3")
        #expect(mutable.httpBody == nil)
        #expect(immutable.url == URL(string: "https://example.com/"))
    }

    @Test("Equality and hash laws hold for NSURLRequest and URLRequest")
    func equalityLaws() {
        let a = NSURLRequest(url: URL(string: "https://example.com/")!)
        let b = NSMutableURLRequest(url: URL(string: "https://example.com/")!)
        let c = NSURLRequest(request: URLRequest(url: URL(string: "https://example.com/")!))
        #expect(a.isEqual(a))
        #expect(a.isEqual(b) && b.isEqual(a))
        #expect(b.isEqual(c) && a.isEqual(c))
        #expect(a.hash == b.hash && b.hash == c.hash)
        b.httpMethod = "POST"
        #expect(!a.isEqual(b) && !b.isEqual(a))
        #expect(!a.isEqual("https://example.com/"))

        var x = URLRequest(url: URL(string: "https://example.com/")!)
        var y = x
        #expect(x == y && x.hashValue == y.hashValue)
        x.setValue("v", forHTTPHeaderField: "Accept")
        y.setValue("v", forHTTPHeaderField: "accept")
        #expect(x == y && x.hashValue == y.hashValue)
        y.timeoutInterval = 1
        #expect(x != y)
    }

    @Test("URLRequest's policy types are NSURLRequest's; the mirror lists the properties")
    func typesAndMirror() {
        #expect(URLRequest.CachePolicy.self == NSURLRequest.CachePolicy.self)
        #expect(URLRequest.NetworkServiceType.self == NSURLRequest.NetworkServiceType.self)
        #expect(URLRequest.ReferenceType.self == NSURLRequest.self)
        #expect(NSURLRequest.NetworkServiceType.networkServiceTypeCallSignaling == .callSignaling)
        let request = URLRequest(url: URL(string: "https://example.com/")!, timeoutInterval: 5)
        let children = Dictionary(
            uniqueKeysWithValues: Mirror(reflecting: request).children.compactMap { child in
                child.label.map { ($0, child.value) }
            })
        #expect(children.count == 12)
        #expect(children["timeoutInterval"] as? TimeInterval == 5)
        #expect(children["cachePolicy"] as? UInt == 0)
        #expect(
            NSURLRequest(url: URL(string: "https://example.com/")!).description.hasSuffix(
                "{ URL: https://example.com/ }"))
    }
}
