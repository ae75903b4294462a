import Foundation

/// The Public Suffix List (publicsuffix.org): which domains are registry-controlled (`com`, `co.uk`, `github.io`),
/// so that a cookie cannot be set for all of them (RFC 6265bis §5.7, step 9).
///
/// The list is read once: the system's copy (Debian's `publicsuffix` package,
/// `/usr/share/publicsuffix/public_suffix_list.dat`) when it is there, as it is updated with the system; else the
/// copy shipped with Courier. Rules are matched as the list specifies: the longest matching rule wins, exception
/// rules (`!`) beat wildcards (`*.`), and an unlisted top-level domain is a public suffix (the implicit `*` rule).
/// The list's internationalized rules (`公司.cn`) are kept in Unicode and in their ASCII form (`xn--55qx5d.cn`,
/// ``Punycode``), in which host names and `Domain` attributes arrive: matched in Unicode only, `xn--55qx5d.cn` fell
/// back to the `cn` rule, and a cookie for it reached every site under it.
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
            if let data = FileManager.default.contents(atPath: path) {
                let list = PublicSuffixList(bytes: Array(data))
                if !list.rules.isEmpty { return list }
            }
        }
        if let url = Bundle.module.url(forResource: "public_suffix_list", withExtension: "dat"),
            let data = try? Data(contentsOf: url)
        {
            return PublicSuffixList(bytes: Array(data))
        }
        return PublicSuffixList(bytes: [])
    }()

    /// Parses the list's text format: one rule per line (up to the first space), `//` comments, blank lines.
    public init(_ text: String) {
        self.init(bytes: Array(text.utf8))
    }

    /// Parses the list from its UTF-8 bytes. Byte by byte, not by `Character`: the list has about 10,000 rules, and
    /// grapheme-aware splitting took some 30 ms where this takes 2.
    public init(bytes: [UInt8]) {
        rules.reserveCapacity(10_000)
        var index = 0
        while index < bytes.count {
            var end = index
            while end < bytes.count, !Self.endsRule(bytes[end]) { end += 1 }
            let isComment =
                end - index >= 2 && bytes[index] == UInt8(ascii: "/") && bytes[index + 1] == UInt8(ascii: "/")
            if end > index, !isComment {
                // The list is lowercase but for ASCII capitals some copies may carry; its Unicode rules are lowercase.
                let rule = bytes[index..<end].map { $0 >= 65 && $0 <= 90 ? $0 + 32 : $0 }
                if rule[0] == UInt8(ascii: "!") {
                    Self.insert(rule.dropFirst(), into: &exceptions)
                } else if rule.count > 2, rule[0] == UInt8(ascii: "*"), rule[1] == UInt8(ascii: ".") {
                    Self.insert(rule.dropFirst(2), into: &wildcards)
                } else {
                    Self.insert(rule[...], into: &rules)
                }
            }
            while end < bytes.count, bytes[end] != UInt8(ascii: "\n") { end += 1 }
            index = end + 1
        }
    }

    /// Inserts a rule, and its ASCII form too when it has non-ASCII labels.
    private static func insert(_ rule: ArraySlice<UInt8>, into set: inout Set<String>) {
        let text = String(decoding: rule, as: UTF8.self)
        set.insert(text)
        guard rule.contains(where: { $0 >= 0x80 }) else { return }
        let labels = text.split(separator: ".", omittingEmptySubsequences: false)
        let ascii = labels.compactMap { Punycode.asciiLabel(String($0)) }
        guard ascii.count == labels.count else { return }
        set.insert(ascii.joined(separator: "."))
    }

    private static func endsRule(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "\n") || byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t")
            || byte == UInt8(ascii: "\r")
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
