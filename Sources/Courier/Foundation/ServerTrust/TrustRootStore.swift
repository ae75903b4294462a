import X509

/// The roots one evaluation trusts, as swift-certificates' verifier asks for them: the trust's anchors, the system's
/// roots (indexed by subject once per process, see ``SystemTrustRoots/bySubject``) and the session's additional
/// certificates, in that order, or the anchors alone when only they count.
///
/// Why not a `CertificateStore` of the whole list: building one hashes the subject of every root, about 150 on
/// Debian, and an evaluation built two. That was most of the time Courier spent on a new TLS connection of a session
/// with a delegate (`Benchmarks/Sources/trust-bench`).
struct TrustRootStore: CustomCertificateStore {
    /// The trust's anchors, by subject (with what ``append(contentsOf:)`` added).
    private var anchors: [DistinguishedName: [Certificate]]
    /// Whether the system's roots and the additional certificates count.
    private let includesOthers: Bool
    /// The session's additional trusted certificates, by subject.
    private let additional: [DistinguishedName: [Certificate]]

    /// The roots `settings` trusts: the anchors, plus (unless only they count) the system's and the session's.
    init(_ settings: SecTrust.Settings) {
        anchors = Dictionary(grouping: (settings.anchors ?? []).compactMap(\.parsed), by: \.subject)
        includesOthers = !(settings.anchors != nil && (settings.anchorsOnly ?? true))
        additional =
            includesOthers ? Dictionary(grouping: settings.additionalRoots.compactMap(\.parsed), by: \.subject) : [:]
    }

    subscript(subject: DistinguishedName) -> [Certificate]? {
        get async { certificates(named: subject) }
    }

    func contains(_ certificate: Certificate) async -> Bool {
        containsRoot(certificate)
    }

    mutating func append(contentsOf certificates: some Sequence<Certificate>) {
        for certificate in certificates {
            anchors[certificate.subject, default: []].append(certificate)
        }
    }

    /// Whether `certificate` is one of the trusted roots.
    func containsRoot(_ certificate: Certificate) -> Bool {
        certificates(named: certificate.subject)?.contains(certificate) ?? false
    }

    /// The trusted roots whose subject is `subject`, in the store's order; `nil` when there are none.
    private func certificates(named subject: DistinguishedName) -> [Certificate]? {
        var found = anchors[subject] ?? []
        if includesOthers {
            found += SystemTrustRoots.bySubject[subject] ?? []
            found += additional[subject] ?? []
        }
        return found.isEmpty ? nil : found
    }
}
