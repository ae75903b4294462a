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
