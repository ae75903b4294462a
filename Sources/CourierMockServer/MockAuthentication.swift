import Crypto
import Foundation

/// How a route of ``MockServer/protect(_:method:user:password:realm:authentication:asProxy:response:)`` asks for
/// credentials, and checks them with its own arithmetic (not a client's).
public enum MockAuthentication: Sendable, Equatable {
    /// HTTP Basic (RFC 7617), `charset="UTF-8"`.
    case basic
    /// HTTP Digest (RFC 7616) with `qop="auth"` and the given algorithm, a fixed nonce per route and an `opaque`
    /// value that must come back.
    case digest(MockDigestAlgorithm)
}

/// A Digest algorithm of ``MockAuthentication/digest(_:)``.
public enum MockDigestAlgorithm: String, Sendable {
    case md5 = "MD5"
    case sha256 = "SHA-256"
}

/// The checking side of a protected route: the challenge it sends and whether a request's credentials pass.
struct ProtectedRouteCheck: Sendable {
    let user: String
    let password: String
    let realm: String
    let authentication: MockAuthentication
    let asProxy: Bool
    let nonce = UUID().uuidString
    let opaque = "mock-opaque"

    /// The field that carries the client's answer.
    var credentialsField: String { asProxy ? "Proxy-Authorization" : "Authorization" }

    /// The 401 (or, for a proxy, 407) that asks for credentials.
    var challenge: MockResponse {
        let value: String
        // The realm as a quoted-string (RFC 9110 §5.6.4): a quote or backslash in it is escaped.
        let quotedRealm = realm.replacingOccurrences(of: "\\", with: "\\\\")
            .replacingOccurrences(of: "\"", with: "\\\"")
        switch authentication {
        case .basic:
            value = "Basic realm=\"\(quotedRealm)\", charset=\"UTF-8\""
        case .digest(let algorithm):
            value =
                "Digest realm=\"\(quotedRealm)\", qop=\"auth\", algorithm=\(algorithm.rawValue), nonce=\"\(nonce)\", opaque=\"\(opaque)\""
        }
        return MockResponse(
            status: asProxy ? 407 : 401,
            headers: [(asProxy ? "Proxy-Authenticate" : "WWW-Authenticate", value)],
            body: .data(Data("authentication required".utf8)))
    }

    /// Whether `request` carries this route's credentials.
    func accepts(_ request: RecordedRequest) -> Bool {
        guard let value = request.header(credentialsField) else { return false }
        switch authentication {
        case .basic:
            // The scheme name is case-insensitive (RFC 9110 §11.1); the credentials are compared decoded.
            let trimmed = value.trimmingSpaces()
            guard let space = trimmed.firstIndex(of: " "), trimmed[..<space].lowercased() == "basic",
                let decoded = Data(base64Encoded: trimmed[space...].trimmingSpaces())
            else { return false }
            return Array(decoded) == Array("\(user):\(password)".utf8)
        case .digest(let algorithm):
            guard value.lowercased().hasPrefix("digest ") else { return false }
            return acceptsDigest(Self.parameters(String(value.dropFirst(7))), algorithm: algorithm, request: request)
        }
    }

    private func acceptsDigest(_ fields: [String: String], algorithm: MockDigestAlgorithm, request: RecordedRequest)
        -> Bool
    {
        guard fields["username"] == user, fields["realm"] == realm, fields["nonce"] == nonce,
            fields["opaque"] == opaque, fields["uri"] == request.target, fields["qop"] == "auth",
            let nc = fields["nc"], let cnonce = fields["cnonce"], let response = fields["response"]
        else { return false }
        if let named = fields["algorithm"], named.uppercased() != algorithm.rawValue { return false }
        let ha1 = Self.hex("\(user):\(realm):\(password)", algorithm)
        let ha2 = Self.hex("\(request.method):\(request.target)", algorithm)
        return response == Self.hex("\(ha1):\(nonce):\(nc):\(cnonce):auth:\(ha2)", algorithm)
    }

    private static func hex(_ text: String, _ algorithm: MockDigestAlgorithm) -> String {
        let bytes: [UInt8]
        switch algorithm {
        case .md5: bytes = Array(Insecure.MD5.hash(data: Data(text.utf8)))
        case .sha256: bytes = Array(SHA256.hash(data: Data(text.utf8)))
        }
        return bytes.map { String(format: "%02x", $0) }.joined()
    }

    /// `name=value` and `name="quoted \" value"` pairs separated by commas; names lowercased.
    static func parameters(_ text: String) -> [String: String] {
        var result: [String: String] = [:]
        var rest = Substring(text)
        while true {
            rest = rest.drop { $0 == " " || $0 == "," }
            guard let equals = rest.firstIndex(of: "=") else { return result }
            let name = rest[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            rest = rest[rest.index(after: equals)...].drop { $0 == " " }
            var value = ""
            if rest.first == "\"" {
                rest = rest.dropFirst()
                var escaped = false
                while let character = rest.first {
                    rest = rest.dropFirst()
                    if escaped {
                        value.append(character)
                        escaped = false
                    } else if character == "\\" {
                        escaped = true
                    } else if character == "\"" {
                        break
                    } else {
                        value.append(character)
                    }
                }
            } else {
                let end = rest.firstIndex(of: ",") ?? rest.endIndex
                value = rest[..<end].trimmingCharacters(in: .whitespaces)
                rest = rest[end...]
            }
            result[name] = value
        }
    }
}

extension MockServer {
    /// Answers `path` with `response` only to requests that authenticate as `user` with `password`; any other
    /// request gets a 401 with a `WWW-Authenticate` challenge for `realm` (with `asProxy`, a 407 with
    /// `Proxy-Authenticate`, and the credentials are read from `Proxy-Authorization`, as a proxy would). Matching
    /// works as for ``route(_:method:response:)``.
    ///
    /// - Parameters:
    ///   - path: The path to protect.
    ///   - method: The method to match, or `nil` for any.
    ///   - user: The user name that is let through.
    ///   - password: Its password.
    ///   - realm: The realm named in the challenge.
    ///   - authentication: Basic (the default) or Digest.
    ///   - asProxy: Answer as a proxy that asks for credentials (407).
    ///   - response: The response to an authenticated request.
    public func protect(
        _ path: String,
        method: String? = nil,
        user: String,
        password: String,
        realm: String = "mock",
        authentication: MockAuthentication = .basic,
        asProxy: Bool = false,
        response: MockResponse
    ) {
        let check = ProtectedRouteCheck(
            user: user, password: password, realm: realm, authentication: authentication, asProxy: asProxy)
        route(path, method: method) { request in
            check.accepts(request) ? response : check.challenge
        }
    }
}
