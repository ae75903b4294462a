import CourierHTTP
import Testing

@Suite("TunnelRefusal")
struct TunnelRefusalTests {
    private let proxyAnswer: [(String, String)] = [
        ("Proxy-Authenticate", "Basic realm=\"gate\""), ("proxy-authenticate", "Digest realm=\"gate\", nonce=\"n\""),
        ("Set-Cookie", "sid=1; Secure"), ("Location", "https://elsewhere.example/"),
        ("WWW-Authenticate", "Basic realm=\"bank\""), ("Cache-Control", "max-age=600"), ("Content-Length", "12"),
        ("Transfer-Encoding", "chunked"), ("Vary", "Cookie"),
    ]

    @Test func a407KeepsOnlyItsChallenges() {
        let fields = TunnelRefusal.responseFields(status: 407, headers: proxyAnswer)
        #expect(fields.map(\.0) == ["Proxy-Authenticate", "proxy-authenticate", "Cache-Control", "Content-Length"])
        #expect(fields.map(\.1).suffix(2) == ["no-store", "0"])
    }

    @Test(arguments: [301, 302, 401, 403, 404, 502])
    func otherRefusalsKeepNothingOfTheProxys(status: Int) {
        let fields = TunnelRefusal.responseFields(status: status, headers: proxyAnswer)
        #expect(fields.map(\.0) == ["Cache-Control", "Content-Length"])
        #expect(fields.map(\.1) == ["no-store", "0"])
    }
}
