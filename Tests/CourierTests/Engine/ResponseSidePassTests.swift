import CourierHTTP
import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import Courier

/// ``StageChain/responseSidePasses(_:_:)``: the engine skips the response side for a response it calls plain, so
/// every such response must come out of the real chain unchanged, with no decision asked; and the responses some
/// stage acts on must never be called plain.
@Suite("Response side: plain responses skip the chain")
struct ResponseSidePassTests {
    private static let url = URL(string: "http://example.test/a")!

    /// One way the task can stand when a response arrives.
    private struct Situation: CustomStringConvertible {
        var storesCookies = false
        var protocolRedirect = false
        var authentication: Authentication = .none
        var caches = false
        var asksForResponses = false

        enum Authentication { case none, met, credentialInFlight }

        var description: String {
            "cookies \(storesCookies), protocol redirect \(protocolRedirect), authentication \(authentication), "
                + "cache \(caches), asks \(asksForResponses)"
        }

        static var all: [Situation] {
            var situations: [Situation] = []
            for storesCookies in [false, true] {
                for protocolRedirect in [false, true] {
                    for authentication in [Authentication.none, .met, .credentialInFlight] {
                        for caches in [false, true] {
                            for asksForResponses in [false, true] {
                                situations.append(
                                    Situation(
                                        storesCookies: storesCookies, protocolRedirect: protocolRedirect,
                                        authentication: authentication, caches: caches,
                                        asksForResponses: asksForResponses))
                            }
                        }
                    }
                }
            }
            return situations
        }
    }

    private static func http(_ status: Int, _ fields: [String: String] = [:]) -> URLResponse {
        HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: fields)!
    }

    private static let responses: [(String, URLResponse)] = [
        ("200", http(200, ["Content-Type": "text/plain"])),
        ("200 with Set-Cookie", http(200, ["Set-Cookie": "a=b"])),
        ("301 with Location", http(301, ["Location": "/b"])),
        ("302 without Location", http(302)),
        ("307 with Location", http(307, ["Location": "http://example.test/c"])),
        ("304", http(304)),
        ("401 Basic", http(401, ["WWW-Authenticate": "Basic realm=\"r\""])),
        ("407 Basic", http(407, ["Proxy-Authenticate": "Basic realm=\"p\""])),
        ("500", http(500)),
        ("multipart/x-mixed-replace", http(200, ["Content-Type": "multipart/x-mixed-replace; boundary=b"])),
        (
            "not HTTP",
            URLResponse(url: url, mimeType: "text/plain", expectedContentLength: 1, textEncodingName: nil)
        ),
    ]

    private final class RecordingDecider: TaskDecider {
        let asked = NIOLockedValueBox(0)
        func decide(_ decision: TaskDecision) async -> TaskDecisionAnswer? {
            asked.withLockedValue { $0 += 1 }
            return nil
        }
    }

    private func context(_ situation: Situation, decider: RecordingDecider) -> StageContext {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpCookieStorage = situation.storesCookies ? HTTPCookieStorage() : nil
        configuration.urlCache = nil
        var authentication: AuthenticationState?
        if situation.authentication != .none {
            let state = AuthenticationState()
            if situation.authentication == .credentialInFlight {
                state.sending(
                    URLCredential(user: "u", password: "p", persistence: .none),
                    for: AuthenticationQuestion.Space(
                        host: "example.test", port: 80, protocol: "http", realm: "r",
                        authenticationMethod: NSURLAuthenticationMethodHTTPBasic))
            }
            authentication = state
        }
        return StageContext(
            configuration: configuration,
            settings: StageSettings(configuration),
            task: nil,
            currentRequest: URLRequest(url: Self.url),
            redirectCount: 0,
            asksForRedirects: false,
            asksForResponses: situation.asksForResponses,
            decider: decider,
            authentication: authentication,
            cache: situation.caches ? CacheTransaction(cache: URLCache(memoryCapacity: 1 << 20, diskCapacity: 0)) : nil,
            protocolRedirect: situation.protocolRedirect ? URLRequest(url: URL(string: "http://example.test/p")!) : nil
        )
    }

    @Test func everyPlainResponseComesOutOfTheChainUnchanged() async {
        var plain = 0
        for situation in Situation.all {
            for (name, response) in Self.responses {
                let decider = RecordingDecider()
                let context = context(situation, decider: decider)
                guard StageChain.responseSidePasses(response, ResponseStageFacts(context)) else { continue }
                plain += 1
                let run = StageChain.runResponseSide(response, context: context)
                guard case .done(.success(.proceed(let delivered))) = run else {
                    Issue.record("\(name) in \(situation) was called plain, but the chain did not pass it on at once")
                    continue
                }
                #expect(delivered === response, "\(name) in \(situation)")
                #expect(decider.asked.withLockedValue { $0 } == 0, "\(name) in \(situation)")
            }
        }
        // A check that always answered false would pass the loop above. Where nothing but cookies and a past
        // challenge stand (no protocol redirect, cache or disposition): 8, 7, 6 and 5 of the 11 responses without a
        // credential in flight (no cookie storage or one, no challenge met or one), only the response that is not
        // HTTP with one in flight (2); with a cache, that response again (6).
        #expect(plain == 8 + 7 + 6 + 5 + 2 + 6)
    }

    @Test func aPlainResponseOfAnOrdinaryTaskPasses() {
        let decider = RecordingDecider()
        let facts = ResponseStageFacts(context(Situation(storesCookies: true), decider: decider))
        #expect(StageChain.responseSidePasses(Self.http(200, ["Content-Length": "64"]), facts))
        #expect(StageChain.responseSidePasses(Self.http(404), facts))
    }

    @Test(arguments: [
        ("200 with Set-Cookie", Situation(storesCookies: true)),
        ("301 with Location", Situation()),
        ("302 without Location", Situation()),
        ("200", Situation(protocolRedirect: true)),
        ("401 Basic", Situation(authentication: .met)),
        ("407 Basic", Situation(authentication: .met)),
        ("200", Situation(authentication: .credentialInFlight)),
        ("200", Situation(caches: true)),
        ("200", Situation(asksForResponses: true)),
    ])
    /// A response some stage acts on, or may act on (a 302 without `Location` is delivered as it is, but telling so
    /// takes the request: the check is conservative), never passes.
    private func aResponseAStageMayActOnDoesNotPass(_ name: String, _ situation: Situation) throws {
        let response = try #require(Self.responses.first { $0.0 == name }?.1)
        let facts = ResponseStageFacts(context(situation, decider: RecordingDecider()))
        #expect(!StageChain.responseSidePasses(response, facts))
    }
}
