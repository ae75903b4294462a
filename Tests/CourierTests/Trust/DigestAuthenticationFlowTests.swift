import CourierHTTP
import CourierMockServer
import Crypto
import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import Courier

/// Digest end to end: a server that checks responses with its own SHA-256 arithmetic (not Courier's), offers Basic
/// too (Courier answers the stronger Digest), and renews its nonce once with `stale=true`.
@Suite("Digest authentication flow")
struct DigestAuthenticationFlowTests {
    final class DigestServer: Sendable {
        let nonces = NIOLockedValueBox<[String]>(["first-nonce"])
        let staleOnce = NIOLockedValueBox(true)
        let seen = NIOLockedValueBox<[String]>([])

        func respond(_ request: RecordedRequest) -> MockResponse {
            let current = nonces.withLockedValue { $0.last! }
            let challenge = MockResponse(
                status: 401,
                headers: [
                    ("WWW-Authenticate", "Basic realm=\"digest-realm\""),
                    (
                        "WWW-Authenticate",
                        "Digest realm=\"digest-realm\", qop=\"auth\", algorithm=SHA-256, nonce=\"\(current)\", opaque=\"op\""
                    ),
                ],
                body: .data(Data("denied".utf8)))
            guard let header = request.header("Authorization"), header.hasPrefix("Digest "),
                let fields = AuthenticationChallengeParser.parse([header]).first
            else { return challenge }
            seen.withLockedValue { $0.append(header) }
            func hex(_ text: String) -> String {
                SHA256.hash(data: Data(text.utf8)).map { String(format: "%02x", $0) }.joined()
            }
            let ha1 = hex("alice:digest-realm:wonder land")
            let ha2 = hex("GET:\(request.target)")
            let nonce = fields.parameter("nonce") ?? ""
            let expected = hex(
                "\(ha1):\(nonce):\(fields.parameter("nc") ?? ""):\(fields.parameter("cnonce") ?? ""):auth:\(ha2)")
            guard fields.parameter("response") == expected, fields.parameter("opaque") == "op",
                fields.parameter("uri") == request.target, nonces.withLockedValue({ $0.contains(nonce) })
            else { return challenge }
            let renews = staleOnce.withLockedValue { once in
                defer { once = false }
                return once
            }
            if renews {
                nonces.withLockedValue { $0.append("second-nonce") }
                return MockResponse(
                    status: 401,
                    headers: [
                        (
                            "WWW-Authenticate",
                            "Digest realm=\"digest-realm\", qop=\"auth\", algorithm=SHA-256, nonce=\"second-nonce\", opaque=\"op\", stale=true"
                        )
                    ])
            }
            return .ok("digested")
        }
    }

    @Test func digestIsPreferredAndAStaleNonceIsRenewedWithoutAsking() async throws {
        try await withServer { server in
            let digest = DigestServer()
            server.route("/d", handler: digest.respond)
            let delegate = ChallengeAnsweringDelegate([(.useCredential, HTTPAuthenticationTests.right)])
            let session = makeSession(delegate: delegate)
            let outcome = await session.runDataTask(server.url("/d?x=1"))
            #expect(outcome.data == Data("digested".utf8))
            let challenges = delegate.challenges.withLockedValue { $0 }
            #expect(challenges.count == 1)
            #expect(challenges.first?.protectionSpace.authenticationMethod == NSURLAuthenticationMethodHTTPDigest)
            let sent = digest.seen.withLockedValue { $0 }
            #expect(sent.count == 2)
            #expect(
                sent.first?.contains("nonce=\"first-nonce\"") == true && sent.first?.contains("nc=00000001") == true)
            #expect(sent.last?.contains("nonce=\"second-nonce\"") == true && sent.last?.contains("nc=00000001") == true)
            #expect(sent.allSatisfy { $0.contains("uri=\"/d?x=1\"") })
            session.invalidateAndCancel()
        }
    }
}

extension DigestAuthenticationFlowTests {
    /// A server that calls every nonce stale: ten silent retries, then the delegate is asked again (and here
    /// cancels) — never an endless loop.
    @Test func anEndlesslyStaleServerEndsTheRetries() async throws {
        try await withServer { server in
            let counter = DigestServer()
            server.route("/s") { request in
                let count = counter.seen.withLockedValue { seen in
                    seen.append("")
                    return seen.count
                }
                let stale = request.header("Authorization") == nil ? "false" : "true"
                let challenge =
                    "Digest realm=\"r\", qop=\"auth\", algorithm=SHA-256, nonce=\"n\(count)\", stale=\(stale)"
                return MockResponse(status: 401, headers: [("WWW-Authenticate", challenge)])
            }
            let delegate = ChallengeAnsweringDelegate([(.useCredential, HTTPAuthenticationTests.right)])
            let session = makeSession(delegate: delegate)
            #expect(await session.runDataTask(server.url("/s")).urlError?.code == .cancelled)
            #expect(delegate.challenges.withLockedValue { $0.map(\.previousFailureCount) } == [0, 1])
            #expect(server.requests.count == 12)
            session.invalidateAndCancel()
        }
    }
}
