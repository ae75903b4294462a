import Crypto
import Foundation
import Testing

@testable import CourierMockServer

@Suite struct ProtectedRouteTests {
    @Test func basicLetsTheRightCredentialsThroughAndChallengesTheRest() async throws {
        let server = MockServer()
        server.protect("/vault", user: "alice", password: "wonder land", realm: "vault", response: .ok("secret"))
        try await withServer(server) { server in
            try await TestConnection.with(port: server.port) { connection in
                try await connection.sendRequest("GET", "/vault")
                let challenge = try await connection.readResponse()
                #expect(challenge.status == 401)
                #expect(challenge.header("WWW-Authenticate") == "Basic realm=\"vault\", charset=\"UTF-8\"")
                let wrong = "Authorization: Basic " + Data("alice:guess".utf8).base64EncodedString()
                try await connection.sendRequest("GET", "/vault", headers: [wrong])
                #expect(try await connection.readResponse().status == 401)
                // Proxy credentials do not open an origin's route.
                let right = Data("alice:wonder land".utf8).base64EncodedString()
                try await connection.sendRequest("GET", "/vault", headers: ["Proxy-Authorization: Basic " + right])
                #expect(try await connection.readResponse().status == 401)
                try await connection.sendRequest("GET", "/vault", headers: ["Authorization: Basic " + right])
                #expect(try await connection.readResponse().text == "secret")
            }
        }
    }

    /// The scheme name is case-insensitive (RFC 9110 §11.1), and a realm with a quote goes out as a valid
    /// quoted-string: `basic …` was refused, and `realm="say "hi""` broke the challenge.
    @Test func basicSchemeIsCaseInsensitiveAndTheRealmIsQuoted() async throws {
        let server = MockServer()
        server.protect("/vault", user: "alice", password: "pw", realm: "say \"hi\"", response: .ok("secret"))
        try await withServer(server) { server in
            try await TestConnection.with(port: server.port) { connection in
                try await connection.sendRequest("GET", "/vault")
                let challenge = try await connection.readResponse()
                #expect(challenge.header("WWW-Authenticate") == "Basic realm=\"say \\\"hi\\\"\", charset=\"UTF-8\"")
                let token = Data("alice:pw".utf8).base64EncodedString()
                for scheme in ["basic", "BASIC"] {
                    try await connection.sendRequest("GET", "/vault", headers: ["Authorization: \(scheme) \(token)"])
                    #expect(try await connection.readResponse().text == "secret")
                }
            }
        }
    }

    @Test func asAProxyItAnswers407AndReadsProxyAuthorization() async throws {
        let server = MockServer()
        server.protect("/p", user: "bob", password: "pw", realm: "proxy", asProxy: true, response: .ok("through"))
        try await withServer(server) { server in
            try await TestConnection.with(port: server.port) { connection in
                let right = Data("bob:pw".utf8).base64EncodedString()
                try await connection.sendRequest("GET", "/p", headers: ["Authorization: Basic " + right])
                let challenge = try await connection.readResponse()
                #expect(challenge.status == 407)
                #expect(challenge.header("Proxy-Authenticate")?.hasPrefix("Basic realm=\"proxy\"") == true)
                #expect(challenge.header("WWW-Authenticate") == nil)
                try await connection.sendRequest("GET", "/p", headers: ["Proxy-Authorization: Basic " + right])
                #expect(try await connection.readResponse().text == "through")
            }
        }
    }

    /// The route's Digest arithmetic, fed RFC 7616 §3.9.1's example (SHA-256, "Mufasa", "Circle of Life"),
    /// accepts the RFC's own response value.
    @Test func digestChecksTheRFC7616Example() {
        var check = ProtectedRouteCheck(
            user: "Mufasa", password: "Circle of Life", realm: "http-auth@example.org",
            authentication: .digest(.sha256), asProxy: false)
        let nonce = check.nonce
        let request = RecordedRequest(
            method: "GET", target: "/dir/index.html", path: "/dir/index.html", query: nil, version: "HTTP/1.1",
            headers: [
                (
                    "Authorization",
                    "Digest username=\"Mufasa\", realm=\"http-auth@example.org\", uri=\"/dir/index.html\", "
                        + "algorithm=SHA-256, nonce=\"\(nonce)\", nc=00000001, "
                        + "cnonce=\"f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ\", qop=auth, "
                        + "response=\"RESPONSE\", opaque=\"mock-opaque\""
                )
            ],
            body: Data(), bodyLength: 0, bodySHA256: "", connectionID: 1)
        // The RFC's response is for its own nonce; recompute it for this route's nonce with the RFC's formula.
        func hex(_ text: String) -> String {
            SHA256.hash(data: Data(text.utf8)).map { String(format: "%02x", $0) }.joined()
        }
        let ha1 = hex("Mufasa:http-auth@example.org:Circle of Life")
        let ha2 = hex("GET:/dir/index.html")
        let response = hex("\(ha1):\(nonce):00000001:f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ:auth:\(ha2)")
        var good = request
        good.headers[0].value = good.headers[0].value.replacingOccurrences(of: "RESPONSE", with: response)
        #expect(check.accepts(good))
        #expect(!check.accepts(request))
        var otherURI = good
        otherURI.target = "/elsewhere"
        #expect(!check.accepts(otherURI))
        check = ProtectedRouteCheck(
            user: "Mufasa", password: "Circle of Life", realm: "http-auth@example.org",
            authentication: .digest(.md5), asProxy: false)
        #expect(!check.accepts(good))
        // With the RFC's nonce, the RFC's published response value checks out.
        #expect(
            hex(
                "\(ha1):7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v:00000001:"
                    + "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ:auth:\(ha2)")
                == "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1")
    }

    @Test func challengeParametersParseQuotedEscapesAndTokens() {
        let fields = ProtectedRouteCheck.parameters("username=\"a\\\"b\", nc=00000001 , qop=auth,uri=\"/x,y\"")
        #expect(fields == ["username": "a\"b", "nc": "00000001", "qop": "auth", "uri": "/x,y"])
        #expect(ProtectedRouteCheck.parameters("") == [:])
        #expect(ProtectedRouteCheck.parameters("broken=\"unterminated") == ["broken": "unterminated"])
    }
}
