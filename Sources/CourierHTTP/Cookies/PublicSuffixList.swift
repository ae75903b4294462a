import Foundation

/// The Public Suffix List (publicsuffix.org): which domains are registry-controlled (`com`, `co.uk`, `github.io`),
/// so that a cookie cannot be set for all of them (RFC 6265bis §5.7, step 9).
///
/// The list is read once: the system's copy (Debian's `publicsuffix` package,
/// `/usr/share/publicsuffix/public_suffix_list.dat`) when it is there, as it is updated with the system; else the
/// copy shipped with Courier. Rules are matched as the list specifies: the longest matching rule wins, exception
/// rules (`!`) beat wildcards (`*.`), and an unlisted top-level domain is a public suffix (the implicit `*` rule).
/// Host names are matched in their ASCII form; the list's internationalized rules are kept in Unicode, so an
/// internationalized domain in punycode (`xn--…`) falls back to the implicit rule for its top level.
public struct PublicSuffixList: Sendable {
    private var rules: Set<String> = []
    /// `*.ck` is stored as `ck`.
    private var wildcards: Set<String> = []
    /// `!www.ck` is stored as `www.ck`.
    private var exceptions: Set<String> = []

    /// Where Linux distributions keep the list.
    public static let systemPaths = ["/usr/share/publicsuffix/public_suffix_list.dat"]

    /// The list of this process: the system's, else Courier's own copy.
    public static let shared: PublicSuffixList = {
        for path in systemPaths {
            if let text = try? String(contentsOfFile: path, encoding: .utf8) {
                let list = PublicSuffixList(text)
                if !list.rules.isEmpty { return list }
            }
        }
        if let url = Bundle.module.url(forResource: "public_suffix_list", withExtension: "dat"),
            let text = try? String(contentsOf: url, encoding: .utf8)
        {
            return PublicSuffixList(text)
        }
        return PublicSuffixList("")
    }()

    /// Parses the list's text format: one rule per line (up to the first space), `//` comments, blank lines.
    public init(_ text: String) {
        for line in text.split(whereSeparator: \.isNewline) {
            guard let rule = line.split(whereSeparator: \.isWhitespace).first, !rule.hasPrefix("//") else { continue }
            let lowered = rule.lowercased()
            if lowered.hasPrefix("!") {
                exceptions.insert(String(lowered.dropFirst()))
            } else if lowered.hasPrefix("*.") {
                wildcards.insert(String(lowered.dropFirst(2)))
            } else {
                rules.insert(lowered)
            }
        }
    }

    /// The public suffix of `domain` (lowercased, without a trailing dot), or `nil` for an empty or malformed name.
    public func publicSuffix(of domain: String) -> String? {
        let labels = Self.labels(of: domain)
        guard let labels else { return nil }
        // Walk from the longest candidate to the shortest: the first match is the longest rule.
        for start in labels.indices {
            let candidate = labels[start...].joined(separator: ".")
            if exceptions.contains(candidate) {
                return labels[(start + 1)...].joined(separator: ".")
            }
            if rules.contains(candidate) { return candidate }
            if start + 1 < labels.count, wildcards.contains(labels[(start + 1)...].joined(separator: ".")) {
                return candidate
            }
        }
        return labels.last
    }

    /// Whether `domain` is itself a public suffix (a cookie must not be set for it).
    public func isPublicSuffix(_ domain: String) -> Bool {
        guard let labels = Self.labels(of: domain) else { return false }
        return publicSuffix(of: domain) == labels.joined(separator: ".")
    }

    /// The registrable domain of `domain` (its public suffix and one more label), or `nil` when `domain` is a
    /// public suffix or malformed.
    public func registrableDomain(of domain: String) -> String? {
        guard let labels = Self.labels(of: domain), let suffix = publicSuffix(of: domain) else { return nil }
        let suffixCount = suffix.split(separator: ".").count
        guard labels.count > suffixCount else { return nil }
        return labels.suffix(suffixCount + 1).joined(separator: ".")
    }

    private static func labels(of domain: String) -> [String]? {
        var name = domain.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard !name.isEmpty, !labels.contains(where: \.isEmpty) else { return nil }
        return labels
    }
}
