/// Whether a DNS name in a certificate's subject alternative names covers a host (RFC 6125 §6.4, as browsers and
/// NIOSSL apply it): case-insensitive, a trailing dot ignored on either side, and a wildcard only as the whole
/// left-most label of a pattern with at least two labels after it (`*.example.com` covers `a.example.com`, neither
/// `example.com` nor `a.b.example.com`; `*.com` covers nothing). The host is a DNS name: an IP address is matched
/// against IP address entries only, never against a DNS name that spells it.
public enum CertificateHostName {
    /// Whether `pattern`, a DNS name entry of a certificate, covers the DNS name `host`.
    public static func matches(pattern: String, host: String) -> Bool {
        let pattern = trimmed(pattern)
        let host = trimmed(host)
        guard !pattern.isEmpty, !host.isEmpty else { return false }
        let patternLabels = pattern.split(separator: ".", omittingEmptySubsequences: false)
        let hostLabels = host.split(separator: ".", omittingEmptySubsequences: false)
        guard patternLabels.count == hostLabels.count, !hostLabels.contains(where: \.isEmpty) else { return false }
        if patternLabels[0] == "*" {
            // At least two labels after the wildcard, none of them another wildcard.
            guard patternLabels.count >= 3, !patternLabels.dropFirst().contains(where: { $0.contains("*") }) else {
                return false
            }
            return patternLabels.dropFirst().elementsEqual(hostLabels.dropFirst())
        }
        return !pattern.contains("*") && patternLabels.elementsEqual(hostLabels)
    }

    private static func trimmed(_ name: String) -> String {
        var name = name.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        return name
    }
}
