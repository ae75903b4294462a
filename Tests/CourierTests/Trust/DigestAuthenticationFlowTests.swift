import CourierHTTP
import CourierMockServer
import CourierTestSupport
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

extension DigestAuthenticationFlowTests {
    /// A server that offers only `qop="auth-int"` and checks the body's SHA-256 in the answer.
    static func protectWithAuthInt(_ server: MockServer) {
        server.route("/int") { request in
            let challenge = MockResponse(
                status: 401,
                headers: [
                    (
                        "WWW-Authenticate",
                        "Digest realm=\"int\", qop=\"auth-int\", algorithm=SHA-256, nonce=\"n1\", opaque=\"op\""
                    )
                ])
            guard let header = request.header("Authorization"),
                let fields = AuthenticationChallengeParser.parse([header]).first
            else { return challenge }
            func hex(_ bytes: Data) -> String { SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined() }
            let ha1 = hex(Data("alice:int:wonder land".utf8))
            let ha2 = hex(Data("\(request.method):\(request.target):\(hex(request.body))".utf8))
            let expected = hex(
                Data(
                    "\(ha1):n1:\(fields.parameter("nc") ?? ""):\(fields.parameter("cnonce") ?? ""):auth-int:\(ha2)"
                        .utf8))
            guard fields.parameter("response") == expected else { return challenge }
            return .ok("body \(request.bodyLength)")
        }
    }

    /// Runs an upload task with a completion handler.
    static func upload(_ session: URLSession, _ request: URLRequest, from source: Data?, file: URL?) async -> (
        Data?, Int?
    ) {
        await withCheckedContinuation { continuation in
            let handler: @Sendable (Data?, URLResponse?, (any Error)?) -> Void = { data, response, _ in
                continuation.resume(returning: (data, (response as? HTTPURLResponse)?.statusCode))
            }
            let task =
                if let file {
                    session.uploadTask(with: request, fromFile: file, completionHandler: handler)
                } else {
                    session.uploadTask(with: request, from: source, completionHandler: handler)
                }
            task.resume()
        }
    }

    /// `auth-int` covers an upload task's body, whether it comes from memory or from a file (hashed in pieces).
    @Test func authIntHashesUploadBodiesFromDataAndFiles() async throws {
        try await withServer { server in
            Self.protectWithAuthInt(server)
            let credential = URLCredential(user: "alice", password: "wonder land", persistence: .none)
            let session = makeSession(
                delegate: ChallengeAnsweringDelegate(Array(repeating: (.useCredential, credential), count: 4)))
            var request = URLRequest(url: server.url("/int"))
            request.httpMethod = "POST"
            let body = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            let fromData = await Self.upload(session, request, from: body, file: nil)
            #expect(fromData.1 == 200 && fromData.0 == Data("body 200000".utf8))

            let file = FileManager.default.temporaryDirectory.appendingPathComponent("auth-int-\(UUID().uuidString)")
            try body.write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            let fromFile = await Self.upload(session, request, from: nil, file: file)
            #expect(fromFile.1 == 200 && fromFile.0 == Data("body 200000".utf8))
            // Each upload: a 401, then the authorized retry.
            #expect(server.requests.count == 4)
            session.invalidateAndCancel()
        }
    }
}

extension DigestAuthenticationFlowTests {
    /// Only Basic spaces get credentials ahead of a challenge: after Digest worked, the next request must not carry
    /// the password as Basic (which Digest exists to avoid); it draws a challenge and answers it with Digest.
    @Test func aDigestSpaceNeverGetsBasicCredentialsAhead() async throws {
        try await withServer { server in
            server.protect(
                "/d", user: "alice", password: "wonder land", realm: "r", authentication: .digest(.sha256),
                response: .ok("in"))
            let credential = URLCredential(user: "alice", password: "wonder land", persistence: .forSession)
            let delegate = ChallengeAnsweringDelegate([(.useCredential, credential), (.performDefaultHandling, nil)])
            let session = makeSession(delegate: delegate)
            #expect(await session.runDataTask(server.url("/d")).data == Data("in".utf8))
            #expect(await session.runDataTask(server.url("/d")).data == Data("in".utf8))
            let sent = server.requests.map { $0.header("Authorization") }
            #expect(sent.count == 4)
            #expect(sent.allSatisfy { $0 == nil || $0!.hasPrefix("Digest ") })
            // The second time the delegate is asked again, with the stored credential proposed.
            let challenges = delegate.challenges.withLockedValue { $0 }
            #expect(challenges.count == 2)
            #expect(challenges.last?.proposedCredential?.password == "wonder land")
            session.invalidateAndCancel()
        }
    }
}
