import Courier
import Foundation
import Testing

/// A protocol that claims nothing: the base class's `canInit` defaults.
private final class InertProtocol: URLProtocol, @unchecked Sendable {}

/// Registered and unregistered by one test only, so that parallel tests do not see it.
private final class RegistrationProtocol: URLProtocol, @unchecked Sendable {}

/// Registered by the ordering test only.
private final class FirstRegisteredProtocol: URLProtocol, @unchecked Sendable {}

/// Registered by the ordering test only.
private final class SecondRegisteredProtocol: URLProtocol, @unchecked Sendable {}

/// Claims requests to `claimed.invalid` only.
private final class HostProtocol: URLProtocol, @unchecked Sendable {
    override class func canInit(with request: URLRequest) -> Bool {
        request.url?.host == "claimed.invalid"
    }

    override class func canonicalRequest(for request: URLRequest) -> URLRequest {
        var canonical = request
        canonical.url = request.url.flatMap { URL(string: $0.absoluteString.lowercased()) }
        return canonical
    }
}

/// A client that records nothing; it only has to exist.
private final class SilentClient: NSObject, URLProtocolClient {
    func urlProtocol(_ protocol: URLProtocol, wasRedirectedTo request: URLRequest, redirectResponse: URLResponse) {}
    func urlProtocol(_ protocol: URLProtocol, cachedResponseIsValid cachedResponse: CachedURLResponse) {}
    func urlProtocol(
        _ protocol: URLProtocol, didReceive response: URLResponse, cacheStoragePolicy policy: URLCache.StoragePolicy
    ) {}
    func urlProtocol(_ protocol: URLProtocol, didLoad data: Data) {}
    func urlProtocolDidFinishLoading(_ protocol: URLProtocol) {}
    func urlProtocol(_ protocol: URLProtocol, didFailWithError error: any Error) {}
    func urlProtocol(_ protocol: URLProtocol, didReceive challenge: URLAuthenticationChallenge) {}
    func urlProtocol(_ protocol: URLProtocol, didCancel challenge: URLAuthenticationChallenge) {}
}

@Suite("URLProtocol")
struct URLProtocolTests {
    private func isRegistered(_ protocolClass: URLProtocol.Type) -> Bool {
        URLProtocol.registeredClasses.contains { $0 == protocolClass }
    }

    @Test func onlySubclassesRegisterAndUnregisterRemovesThem() {
        #expect(!URLProtocol.registerClass(NSObject.self))
        #expect(!URLProtocol.registerClass(URLRequestTestsBox.self))
        #expect(!isRegistered(RegistrationProtocol.self))
        #expect(URLProtocol.registerClass(RegistrationProtocol.self))
        #expect(isRegistered(RegistrationProtocol.self))
        #expect(URLProtocol.registerClass(RegistrationProtocol.self))
        #expect(URLProtocol.registeredClasses.filter { $0 == RegistrationProtocol.self }.count == 1)
        URLProtocol.unregisterClass(RegistrationProtocol.self)
        #expect(!isRegistered(RegistrationProtocol.self))
        URLProtocol.unregisterClass(RegistrationProtocol.self)
        #expect(!isRegistered(RegistrationProtocol.self))
    }

    @Test func laterRegistrationsAreConsultedFirst() throws {
        #expect(URLProtocol.registerClass(FirstRegisteredProtocol.self))
        #expect(URLProtocol.registerClass(SecondRegisteredProtocol.self))
        defer {
            URLProtocol.unregisterClass(FirstRegisteredProtocol.self)
            URLProtocol.unregisterClass(SecondRegisteredProtocol.self)
        }
        let ours = URLProtocol.registeredClasses.filter {
            $0 == FirstRegisteredProtocol.self || $0 == SecondRegisteredProtocol.self
        }
        try #require(ours.count == 2)
        #expect(ours[0] == SecondRegisteredProtocol.self)
        #expect(ours[1] == FirstRegisteredProtocol.self)
        // Registering again moves a class to the front.
        #expect(URLProtocol.registerClass(FirstRegisteredProtocol.self))
        let reordered = URLProtocol.registeredClasses.filter {
            $0 == FirstRegisteredProtocol.self || $0 == SecondRegisteredProtocol.self
        }
        #expect(reordered.first == FirstRegisteredProtocol.self)
    }

    @Test func propertiesRoundTripAndDoNotChangeEquality() throws {
        let url = try #require(URL(string: "https://example.com/a"))
        let plain = URLRequest(url: url)
        var request = plain
        #expect(URLProtocol.property(forKey: "handled", in: request) == nil)
        URLProtocol.setProperty(true, forKey: "handled", in: &request)
        URLProtocol.setProperty("one", forKey: "name", in: &request)
        #expect(URLProtocol.property(forKey: "handled", in: request) as? Bool == true)
        #expect(URLProtocol.property(forKey: "name", in: request) as? String == "one")
        URLProtocol.setProperty("two", forKey: "name", in: &request)
        #expect(URLProtocol.property(forKey: "name", in: request) as? String == "two")

        let copy = request
        URLProtocol.removeProperty(forKey: "handled", in: &request)
        #expect(URLProtocol.property(forKey: "handled", in: request) == nil)
        #expect(URLProtocol.property(forKey: "handled", in: copy) as? Bool == true)
        #expect(URLProtocol.property(forKey: "name", in: plain) == nil)

        #expect(copy == plain)
        #expect(copy.hashValue == plain.hashValue)
    }

    @Test func darwinsMutableRequestFormsSetAndRemoveProperties() throws {
        let url = try #require(URL(string: "https://example.com/a"))
        // The usual marker of a protocol that loads through another session, written as on Darwin.
        let mutable = try #require(NSURLRequest(url: url).mutableCopy() as? NSMutableURLRequest)
        URLProtocol.setProperty(true, forKey: "Handled", in: mutable)
        // `mutable as URLRequest` on Darwin; Linux has no bridging casts, so the bridge is called by name.
        let tagged = URLRequest._unconditionallyBridgeFromObjectiveC(mutable)
        #expect(URLProtocol.property(forKey: "Handled", in: tagged) as? Bool == true)
        URLProtocol.removeProperty(forKey: "Handled", in: mutable)
        #expect(
            URLProtocol.property(forKey: "Handled", in: URLRequest._unconditionallyBridgeFromObjectiveC(mutable)) == nil
        )
    }

    @Test func canInitDefaults() throws {
        let claimed = URLRequest(url: try #require(URL(string: "https://claimed.invalid/x")))
        let other = URLRequest(url: try #require(URL(string: "https://example.com/x")))
        #expect(!URLProtocol.canInit(with: claimed))
        #expect(!InertProtocol.canInit(with: claimed))
        #expect(HostProtocol.canInit(with: claimed))
        #expect(!HostProtocol.canInit(with: other))

        // canInit(with: task) asks about the task's current request.
        let session = URLSession(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let claimedTask = session.dataTask(with: claimed)
        let otherTask = session.dataTask(with: other)
        #expect(HostProtocol.canInit(with: claimedTask))
        #expect(!HostProtocol.canInit(with: otherTask))
        #expect(!InertProtocol.canInit(with: claimedTask))
    }

    @Test func canonicalRequestAndCacheEquivalence() throws {
        let lower = URLRequest(url: try #require(URL(string: "https://example.com/a")))
        let upper = URLRequest(url: try #require(URL(string: "https://EXAMPLE.com/A")))
        #expect(URLProtocol.canonicalRequest(for: upper) == upper)
        #expect(!URLProtocol.requestIsCacheEquivalent(lower, to: upper))
        #expect(URLProtocol.requestIsCacheEquivalent(lower, to: lower))
        #expect(HostProtocol.requestIsCacheEquivalent(lower, to: upper))
    }

    @Test func initializersKeepRequestClientCachedResponseAndTask() throws {
        let url = try #require(URL(string: "https://example.com/a"))
        let request = URLRequest(url: url)
        let client = SilentClient()
        let response = URLResponse(url: url, mimeType: "text/plain", expectedContentLength: 1, textEncodingName: nil)
        let cached = CachedURLResponse(response: response, data: Data("x".utf8))

        let fromRequest = InertProtocol(request: request, cachedResponse: cached, client: client)
        #expect(fromRequest.request == request)
        #expect(fromRequest.cachedResponse === cached)
        #expect(fromRequest.client === client)
        #expect(fromRequest.task == nil)
        fromRequest.startLoading()
        fromRequest.stopLoading()

        let session = URLSession(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let task = session.dataTask(with: request)
        let fromTask = InertProtocol(task: task, cachedResponse: nil, client: nil)
        #expect(fromTask.request == request)
        #expect(fromTask.task === task)
        #expect(fromTask.client == nil)
        #expect(fromTask.cachedResponse == nil)
    }
}

/// A class that is not a `URLProtocol`, for the registration test.
private final class URLRequestTestsBox {}
