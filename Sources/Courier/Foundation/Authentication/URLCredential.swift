import Foundation

/// An authentication credential: a user name and password, a server trust, or a client certificate identity.
///
/// Credentials are immutable; ``copy(with:)`` returns the receiver.
///
/// A user-and-password credential archives with `NSKeyedArchiver` (secure coding). Server-trust and identity
/// credentials archive as a marker only: a `SecTrust` or a private key is not archived, so ``init(coder:)`` returns
/// `nil` for them.
open class URLCredential: NSObject, NSSecureCoding, NSCopying, @unchecked Sendable {
    private let storedUser: String?
    private let storedPassword: String?
    private let storedPersistence: URLCredential.Persistence
    private let storedTrust: SecTrust?
    private let storedIdentity: SecIdentity?
    private let storedCertificates: [Any]

    /// Creates a credential with a user name and password.
    ///
    /// - Parameters:
    ///   - user: The user name.
    ///   - password: The password.
    ///   - persistence: How long the credential is kept in a credential storage.
    public init(user: String, password: String, persistence: URLCredential.Persistence) {
        storedUser = user
        storedPassword = password
        storedPersistence = persistence
        storedTrust = nil
        storedIdentity = nil
        storedCertificates = []
        super.init()
    }

    /// Creates a credential that presents a client certificate, for client certificate authentication challenges
    /// (`NSURLAuthenticationMethodClientCertificate`).
    ///
    /// - Parameters:
    ///   - identity: The certificate and private key, from ``SecPKCS12Import(_:_:_:)`` or
    ///     ``SecIdentity/courierIdentity(certificateChainPEM:privateKeyPEM:passphrase:)``.
    ///   - certificates: Intermediate certificates (``SecCertificate``) sent after the identity's own, or `nil`.
    ///     A chain the identity already carries (a PKCS #12 archive's, or the PEM text's) is sent when this is
    ///     `nil` or empty.
    ///   - persistence: How long the credential is kept in a credential storage. Identity credentials stay in
    ///     memory: `.permanent` and `.synchronizable` ones are not written to the credentials file.
    public init(identity: SecIdentity, certificates: [Any]?, persistence: URLCredential.Persistence) {
        storedUser = nil
        storedPassword = nil
        storedPersistence = persistence
        storedTrust = nil
        storedIdentity = identity
        storedCertificates = certificates ?? []
        super.init()
    }

    /// Creates a credential that accepts a server's trust, for server trust authentication challenges.
    ///
    /// The credential's persistence is ``Persistence-swift.enum/forSession``.
    ///
    /// - Parameter trust: The trust the credential accepts.
    public init(trust: SecTrust) {
        storedUser = nil
        storedPassword = nil
        storedPersistence = .forSession
        storedTrust = trust
        storedIdentity = nil
        storedCertificates = []
        super.init()
    }

    /// How long the credential is kept in a credential storage.
    open var persistence: URLCredential.Persistence { storedPersistence }

    /// The credential's user name, or `nil` for a trust or identity credential.
    open var user: String? { storedUser }

    /// The credential's password, or `nil` for a trust or identity credential.
    open var password: String? { storedPassword }

    /// Whether the credential has a password.
    open var hasPassword: Bool { storedPassword != nil }

    /// The intermediate certificates of an identity credential, as given to ``init(identity:certificates:persistence:)``;
    /// empty for other credentials.
    open var certificates: [Any] { storedCertificates }

    /// The identity of a client certificate credential, or `nil`.
    open var identity: SecIdentity? { storedIdentity }

    /// The trust of a credential created with ``init(trust:)``, or `nil`.
    package var trust: SecTrust? { storedTrust }

    /// Decodes a credential archived with ``encode(with:)``.
    ///
    /// Returns `nil` when the coder is not a keyed coder, a value is missing or invalid, or the archive holds a
    /// server-trust credential (whose `SecTrust` was not archived).
    ///
    /// - Parameter aDecoder: A keyed decoder, such as `NSKeyedUnarchiver`.
    public required init?(coder aDecoder: NSCoder) {
        guard aDecoder.allowsKeyedCoding, !aDecoder.decodeBool(forKey: ArchiveKey.isTrust),
            let user = aDecoder.decodeObject(of: NSString.self, forKey: ArchiveKey.user),
            let persistence = Persistence(
                rawValue: UInt(clamping: aDecoder.decodeInteger(forKey: ArchiveKey.persistence)))
        else { return nil }
        storedUser = user as String
        storedPassword = aDecoder.decodeObject(of: NSString.self, forKey: ArchiveKey.password).map { $0 as String }
        storedPersistence = persistence
        storedTrust = nil
        storedIdentity = nil
        storedCertificates = []
        super.init()
    }

    /// `true`: credentials decode with `NSKeyedUnarchiver`'s secure coding.
    open class var supportsSecureCoding: Bool { true }

    /// Archives the user name, password and persistence with a keyed coder; a server-trust or identity credential
    /// archives only a marker that makes ``init(coder:)`` fail (a coder that does not allow keyed coding archives nothing).
    ///
    /// - Parameter aCoder: A keyed coder, such as `NSKeyedArchiver`.
    open func encode(with aCoder: NSCoder) {
        guard aCoder.allowsKeyedCoding else { return }
        aCoder.encode(storedTrust != nil || storedIdentity != nil, forKey: ArchiveKey.isTrust)
        aCoder.encode(storedUser.map { NSString(string: $0) }, forKey: ArchiveKey.user)
        aCoder.encode(storedPassword.map { NSString(string: $0) }, forKey: ArchiveKey.password)
        aCoder.encode(Int(storedPersistence.rawValue), forKey: ArchiveKey.persistence)
    }

    /// The keys of a credential's archive (FoundationNetworking's where it has one).
    private enum ArchiveKey {
        static let user = "NS._user"
        static let password = "NS._password"
        static let persistence = "courier.persistence"
        static let isTrust = "courier.isTrust"
    }

    /// Returns the receiver: credentials are immutable.
    ///
    /// - Parameter zone: Ignored.
    open func copy(with zone: NSZone? = nil) -> Any {
        self
    }

    /// Returns the receiver (see ``copy(with:)``).
    open override func copy() -> Any {
        copy(with: nil)
    }

    /// Whether another object is a credential with the same user, password, persistence, trust and identity.
    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? URLCredential else { return false }
        return user == other.user && password == other.password && persistence == other.persistence
            && storedTrust === other.storedTrust && storedIdentity === other.storedIdentity
    }

    /// A hash consistent with ``isEqual(_:)``.
    open override var hash: Int {
        var hasher = Hasher()
        hasher.combine(user)
        hasher.combine(persistence)
        return hasher.finalize()
    }
}

extension URLCredential {
    /// How long a credential is kept.
    public enum Persistence: UInt, Sendable {
        /// The credential is not stored.
        case none = 0
        /// The credential is stored for the lifetime of the session.
        case forSession = 1
        /// The credential is stored permanently (in memory in Courier for now).
        case permanent = 2
        /// The credential is stored permanently and would be shared between devices (in memory in Courier for now).
        case synchronizable = 3
    }
}
