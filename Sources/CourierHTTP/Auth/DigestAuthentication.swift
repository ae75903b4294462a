import Crypto
import Foundation

/// The Digest scheme (RFC 7616): what a challenge asks for, and the `Authorization` value that answers it.
public struct DigestAuthentication: Sendable, Equatable {
    /// The hash algorithms of RFC 7616 §3.2; `-sess` variants hash the client nonce into the secret.
    public enum Algorithm: String, Sendable, CaseIterable {
        case md5 = "MD5"
        case md5Session = "MD5-sess"
        case sha256 = "SHA-256"
        case sha256Session = "SHA-256-sess"

        var isSession: Bool { self == .md5Session || self == .sha256Session }

        /// The lowercase hex hash of `text`.
        public func hash(_ text: [UInt8]) -> String {
            switch self {
            case .md5, .md5Session: return Hex.lowercase(Insecure.MD5.hash(data: text))
            case .sha256, .sha256Session: return Hex.lowercase(SHA256.hash(data: text))
            }
        }

        /// The hash of a file's bytes, read 64 KiB at a time (an upload's body for `auth-int`, never read whole).
        public func hash(contentsOf file: URL) throws -> String {
            let handle = try FileHandle(forReadingFrom: file)
            defer { try? handle.close() }
            switch self {
            case .md5, .md5Session:
                var hasher = Insecure.MD5()
                while let chunk = try handle.read(upToCount: 64 * 1024), !chunk.isEmpty { hasher.update(data: chunk) }
                return Hex.lowercase(hasher.finalize())
            case .sha256, .sha256Session:
                var hasher = SHA256()
                while let chunk = try handle.read(upToCount: 64 * 1024), !chunk.isEmpty { hasher.update(data: chunk) }
                return Hex.lowercase(hasher.finalize())
            }
        }
    }

    /// The quality of protection: `auth` (the request line) or `auth-int` (also the body).
    public enum Protection: String, Sendable {
        case auth
        case authInt = "auth-int"
    }

    public var realm: String
    public var nonce: String
    public var opaque: String?
    public var algorithm: Algorithm
    /// `nil` for an RFC 2069 challenge without `qop`.
    public var protection: Protection?
    /// The server rejected the nonce only, not the credential: answer again with the new one without asking.
    public var isStale: Bool
    /// Send the user name hashed (RFC 7616 §3.4.4).
    public var userHash: Bool

    /// The Digest parameters of `challenge`, or `nil` when it is not a Digest challenge Courier can answer (no
    /// nonce or realm, an unknown algorithm, or only protections it does not know).
    public init?(_ challenge: AuthenticationChallenge) {
        guard challenge.isScheme("Digest"), let realm = challenge.realm, let nonce = challenge.parameter("nonce")
        else { return nil }
        let algorithmName = challenge.parameter("algorithm") ?? "MD5"
        guard let algorithm = Algorithm.allCases.first(where: { HeaderName.equal($0.rawValue, algorithmName) })
        else { return nil }
        if let qop = challenge.parameter("qop") {
            let offered = qop.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            if offered.contains("auth") {
                protection = .auth
            } else if offered.contains("auth-int") {
                protection = .authInt
            } else {
                return nil
            }
        } else {
            protection = nil
        }
        self.realm = realm
        self.nonce = nonce
        self.opaque = challenge.parameter("opaque")
        self.algorithm = algorithm
        self.isStale = challenge.parameter("stale")?.lowercased() == "true"
        self.userHash = challenge.parameter("userhash")?.lowercased() == "true"
    }

    /// The `Authorization` value for `user` and `password` on `method` `uri` (the request target), with nonce count
    /// `nonceCount` and client nonce `clientNonce`; `body` is hashed for `auth-int`, unless its hash is given as
    /// `bodyHash` (for a body that is not in memory).
    public func authorizationValue(
        user: String, password: String, method: String, uri: String, nonceCount: Int, clientNonce: String,
        body: [UInt8] = [], bodyHash: String? = nil
    ) -> String {
        let hash: ([UInt8]) -> String = algorithm.hash
        var secret = hash(Array("\(user):\(realm):\(password)".utf8))
        if algorithm.isSession { secret = hash(Array("\(secret):\(nonce):\(clientNonce)".utf8)) }
        let request: String
        if protection == .authInt {
            request = hash(Array("\(method):\(uri):\(bodyHash ?? hash(body))".utf8))
        } else {
            request = hash(Array("\(method):\(uri)".utf8))
        }
        let count = String(nonceCount, radix: 16).leftPadded(to: 8)
        let response: String
        if let protection {
            response = hash(Array("\(secret):\(nonce):\(count):\(clientNonce):\(protection.rawValue):\(request)".utf8))
        } else {
            response = hash(Array("\(secret):\(nonce):\(request)".utf8))
        }
        var fields = [
            "username=\(Self.quoted(userHash ? hash(Array("\(user):\(realm)".utf8)) : user))",
            "realm=\(Self.quoted(realm))", "uri=\(Self.quoted(uri))", "algorithm=\(algorithm.rawValue)",
            "nonce=\(Self.quoted(nonce))",
        ]
        if let protection {
            fields += ["nc=\(count)", "cnonce=\(Self.quoted(clientNonce))", "qop=\(protection.rawValue)"]
        }
        fields.append("response=\(Self.quoted(response))")
        if let opaque { fields.append("opaque=\(Self.quoted(opaque))") }
        if userHash { fields.append("userhash=true") }
        return "Digest " + fields.joined(separator: ", ")
    }

    /// A quoted string, with `"` and `\` escaped.
    static func quoted(_ value: String) -> String {
        var result = "\""
        for character in value {
            if character == "\"" || character == "\\" { result.append("\\") }
            result.append(character)
        }
        return result + "\""
    }

    /// A fresh client nonce: 16 random bytes in hex.
    public static func makeClientNonce() -> String {
        Hex.lowercase((0..<16).map { _ in UInt8.random(in: 0...255) })
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        count >= length ? self : String(repeating: "0", count: length - count) + self
    }
}
