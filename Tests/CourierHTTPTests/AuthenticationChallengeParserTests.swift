import CourierHTTP
import Testing

@Suite("Authentication challenge parsing")
struct AuthenticationChallengeParserTests {
    typealias Challenge = AuthenticationChallenge

    struct Row: CustomTestStringConvertible, Sendable {
        let fields: [String]
        let expected: [Challenge]
        var testDescription: String { fields.joined(separator: " | ") }
    }

    static let rows: [Row] = [
        // RFC 9110 §11.6.1 and RFC 7617/7616 shapes.
        Row(
            fields: ["Basic realm=\"simple\""],
            expected: [Challenge(scheme: "Basic", parameters: [("realm", "simple")])]),
        Row(
            fields: ["Basic realm=\"a\", charset=\"UTF-8\""],
            expected: [Challenge(scheme: "Basic", parameters: [("realm", "a"), ("charset", "UTF-8")])]),
        Row(
            fields: ["Newauth realm=\"apps\", type=1, title=\"Login to \\\"apps\\\"\", Basic realm=\"simple\""],
            expected: [
                Challenge(
                    scheme: "Newauth", parameters: [("realm", "apps"), ("type", "1"), ("title", "Login to \"apps\"")]),
                Challenge(scheme: "Basic", parameters: [("realm", "simple")]),
            ]),
        Row(
            fields: [
                "Digest realm=\"http-auth@example.org\", qop=\"auth, auth-int\", algorithm=SHA-256, nonce=\"7ypf\""
            ],
            expected: [
                Challenge(
                    scheme: "Digest",
                    parameters: [
                        ("realm", "http-auth@example.org"), ("qop", "auth, auth-int"), ("algorithm", "SHA-256"),
                        ("nonce", "7ypf"),
                    ])
            ]),
        // Across fields, token68, lone schemes, empty list elements and spaces around `=`.
        Row(
            fields: ["Negotiate abc+/==", "Basic realm = \"x\" ,, ", "NTLM"],
            expected: [
                Challenge(scheme: "Negotiate", token68: "abc+/=="),
                Challenge(scheme: "Basic", parameters: [("realm", "x")]),
                Challenge(scheme: "NTLM"),
            ]),
        Row(fields: ["Bearer"], expected: [Challenge(scheme: "Bearer")]),
        Row(fields: ["", " , ,"], expected: []),
        // The first of two values wins.
        Row(
            fields: ["Basic realm=\"first\", realm=\"second\""],
            expected: [Challenge(scheme: "Basic", parameters: [("realm", "first")])]),
        // Hostile: an unterminated quote drops its challenge only; a NUL drops its challenge; a parameter before any
        // scheme is dropped; garbage after a value drops the challenge.
        Row(
            fields: ["Basic realm=\"a\", Digest realm=\"b"],
            expected: [Challenge(scheme: "Basic", parameters: [("realm", "a")])]),
        Row(
            fields: ["Basic realm=\"a\u{0}b\", Bearer"],
            expected: [Challenge(scheme: "Bearer")]),
        Row(fields: ["realm=\"orphan\", Basic"], expected: [Challenge(scheme: "Basic")]),
        Row(fields: ["Basic realm=\"a\" junk"], expected: []),
        Row(fields: ["Basic realm=\"a\\"], expected: []),
        Row(fields: ["=\"x\""], expected: []),
    ]

    @Test(arguments: rows)
    func parses(_ row: Row) {
        #expect(AuthenticationChallengeParser.parse(row.fields) == row.expected)
    }

    @Test func lookupsIgnoreCase() throws {
        let challenge = try #require(AuthenticationChallengeParser.parse(["dIgEsT REALM=\"r\", Nonce=n"]).first)
        #expect(challenge.isScheme("Digest") && !challenge.isScheme("Basic"))
        #expect(challenge.realm == "r" && challenge.parameter("nonce") == "n")
    }

    @Test func hugeInputsAreBounded() {
        let many = Array(repeating: "Basic realm=\"r\"", count: 10_000).joined(separator: ", ")
        #expect(many.utf8.count > AuthenticationChallengeParser.maximumFieldLength)
        #expect(AuthenticationChallengeParser.parse([many]).isEmpty)
        let fields = Array(repeating: "Basic realm=\"r\", Bearer", count: 1_000)
        #expect(AuthenticationChallengeParser.parse(fields).count == AuthenticationChallengeParser.maximumChallenges)
        let hugeRealm = "Basic realm=\"" + String(repeating: "x", count: 1 << 20) + "\""
        #expect(AuthenticationChallengeParser.parse([hugeRealm]).isEmpty)
    }
}

@Suite("Basic authentication")
struct BasicAuthenticationTests {
    @Test func encodesUTF8AsRFC7617Shows() {
        // RFC 7617 §2: Aladdin / open sesame; §2.1: test / 123£ in UTF-8.
        #expect(
            BasicAuthentication.authorizationValue(user: "Aladdin", password: "open sesame")
                == "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==")
        #expect(BasicAuthentication.authorizationValue(user: "test", password: "123\u{A3}") == "Basic dGVzdDoxMjPCow==")
        #expect(BasicAuthentication.authorizationValue(user: "", password: "") == "Basic Og==")
    }

    @Test func refusesUsersWithAColonAndControlCharacters() {
        #expect(BasicAuthentication.authorizationValue(user: "a:b", password: "p") == nil)
        #expect(BasicAuthentication.authorizationValue(user: "a", password: "p\r\nX-Injected: 1") == nil)
    }
}

@Suite("Digest authentication")
struct DigestAuthenticationTests {
    /// RFC 7616 §3.9.1: the same request answered with SHA-256 and with MD5.
    static let challengeText =
        "Digest realm=\"http-auth@example.org\", qop=\"auth, auth-int\", algorithm=%@,"
        + " nonce=\"7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v\", opaque=\"FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS\""

    @Test(arguments: [
        ("SHA-256", "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1"),
        ("MD5", "8ca523f5e9506fed4657c9700eebdbec"),
    ])
    func theRFCExampleGivesItsResponse(algorithm: String, expected: String) throws {
        let text = Self.challengeText.replacingOccurrences(of: "%@", with: algorithm)
        let challenge = try #require(AuthenticationChallengeParser.parse([text]).first)
        let digest = try #require(DigestAuthentication(challenge))
        #expect(digest.protection == .auth && !digest.isStale && !digest.userHash)
        let value = digest.authorizationValue(
            user: "Mufasa", password: "Circle of Life", method: "GET", uri: "/dir/index.html", nonceCount: 1,
            clientNonce: "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ")
        #expect(value.contains("response=\"\(expected)\""))
        #expect(value.hasPrefix("Digest username=\"Mufasa\", realm=\"http-auth@example.org\", uri=\"/dir/index.html\""))
        #expect(
            value.contains("nc=00000001") && value.contains("qop=auth,") && value.contains("algorithm=\(algorithm)"))
        #expect(value.contains("opaque=\"FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS\""))
        // The answer parses back as a credentials list of the same shape.
        let echoed = try #require(AuthenticationChallengeParser.parse([value]).first)
        #expect(echoed.parameter("response") == expected && echoed.parameter("cnonce") != nil)
    }

    @Test func unanswerableChallengesAreRefused() {
        func digest(_ text: String) -> DigestAuthentication? {
            AuthenticationChallengeParser.parse([text]).first.flatMap(DigestAuthentication.init)
        }
        #expect(digest("Digest realm=\"r\"") == nil)  // no nonce
        #expect(digest("Digest nonce=\"n\"") == nil)  // no realm
        #expect(digest("Digest realm=\"r\", nonce=\"n\", algorithm=SHA-512-256") == nil)
        #expect(digest("Digest realm=\"r\", nonce=\"n\", qop=\"auth-conf\"") == nil)
        #expect(digest("Basic realm=\"r\"") == nil)
        #expect(
            digest("Digest realm=\"r\", nonce=\"n\", stale=TRUE, userhash=true, algorithm=sha-256-SESS")
                == DigestAuthentication(
                    AuthenticationChallenge(
                        scheme: "Digest",
                        parameters: [
                            ("realm", "r"), ("nonce", "n"), ("stale", "true"), ("userhash", "true"),
                            ("algorithm", "SHA-256-sess"),
                        ])))
    }

    /// RFC 2069 (no qop): response = H(HA1:nonce:HA2); userhash hashes the user with the realm; quotes are escaped.
    @Test func legacyUserhashAndEscaping() throws {
        let challenge = try #require(
            AuthenticationChallengeParser.parse(["Digest realm=\"r\\\"q\", nonce=\"n\", userhash=true"]).first)
        let digest = try #require(DigestAuthentication(challenge))
        #expect(digest.protection == nil && digest.userHash && digest.realm == "r\"q")
        let value = digest.authorizationValue(
            user: "u", password: "p", method: "GET", uri: "/", nonceCount: 1, clientNonce: "c")
        #expect(value.contains("realm=\"r\\\"q\"") && !value.contains("nc=") && value.contains("userhash=true"))
        #expect(!value.contains("username=\"u\""))
    }

    @Test func clientNoncesAreFreshHex() {
        let one = DigestAuthentication.makeClientNonce()
        #expect(one.count == 32 && one.allSatisfy(\.isHexDigit))
        #expect(one != DigestAuthentication.makeClientNonce())
    }
}
