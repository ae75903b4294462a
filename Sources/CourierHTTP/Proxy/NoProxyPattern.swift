/// One entry of `no_proxy` or of a proxy dictionary's `ExceptionsList`: the hosts that go direct.
///
/// - `*`: every host.
/// - A name, optionally with a leading `.` or `*.`: that host and every host below it (`example.com` matches
///   `example.com` and `api.example.com`, not `badexample.com`), case-insensitively.
/// - An IP address: that address; an address with a prefix length (`10.0.0.0/8`, `fd00::/8`, Darwin's short
///   `169.254/16`): every address in that block. An IPv4 address whose last bytes are `*` (`192.168.*`,
///   `10.1.*.*`) is the block of the bytes given (`192.168.0.0/16`).
/// - Any other entry with a `*` (`*example.com`, `build-*.example.com`) is a pattern for the whole host name, in
///   which `*` stands for any run of characters, dots included, as in the exceptions list of macOS's proxy settings.
/// - Any of these followed by `:port`: only that port.
public struct NoProxyPattern: Hashable, Sendable {
    private enum Host: Hashable, Sendable {
        case any
        case domain(String)
        case block(bytes: [UInt8], prefixLength: Int)
        /// The pattern split at its `*`s: the host starts with the first piece, ends with the last, and holds
        /// the others in order between them.
        case glob([String])
    }

    private let host: Host
    private let port: Int?

    /// The pattern `text` states, or `nil` for an empty or unreadable entry.
    public init?(_ text: String) {
        var entry = text.trimmingCharacters(in: .whitespaces).lowercased()
        guard !entry.isEmpty else { return nil }
        var port: Int?
        // A port after the last colon: "host:8080", "[::1]:8080"; a bare IPv6 address has several colons.
        if entry.hasPrefix("["), let close = entry.firstIndex(of: "]") {
            let rest = entry[entry.index(after: close)...]
            if rest.hasPrefix(":") { port = Int(rest.dropFirst()) }
            entry = String(entry[entry.index(after: entry.startIndex)..<close])
        } else if entry.filter({ $0 == ":" }).count == 1, let colon = entry.lastIndex(of: ":") {
            port = Int(entry[entry.index(after: colon)...])
            entry = String(entry[..<colon])
        }
        self.port = port
        if entry == "*" {
            host = .any
            return
        }
        if let block = Self.block(entry) {
            host = block
            return
        }
        // A `*` anywhere but in a leading `*.` (`192.168.*` is a block above): a pattern for the whole name. Read
        // as a domain it would match no host, and the hosts the user listed would silently keep using the proxy.
        if entry.dropFirst(entry.hasPrefix("*.") ? 2 : 0).contains("*") {
            guard !entry.contains("/") else { return nil }
            host = .glob(entry.split(separator: "*", omittingEmptySubsequences: false).map(String.init))
            return
        }
        if entry.hasPrefix("*.") { entry.removeFirst(2) }
        if entry.hasPrefix(".") { entry.removeFirst() }
        guard !entry.isEmpty, !entry.contains("/") else { return nil }
        host = .domain(entry)
    }

    /// Whether a request to `host` (no brackets) on `port` goes direct.
    public func matches(host candidate: String, port candidatePort: Int) -> Bool {
        if let port, port != candidatePort { return false }
        switch host {
        case .any:
            return true
        case .domain(let domain):
            let name = candidate.lowercased()
            return name == domain || name.hasSuffix("." + domain)
        case .block(let bytes, let prefixLength):
            guard let address = Self.address(candidate), address.count == bytes.count else { return false }
            return Self.prefix(address, prefixLength) == Self.prefix(bytes, prefixLength)
        case .glob(let pieces):
            return Self.name(candidate.lowercased(), matches: pieces)
        }
    }

    /// Whether `name` is `pieces` joined by runs of any characters (at least two pieces: the pattern had a `*`).
    private static func name(_ name: String, matches pieces: [String]) -> Bool {
        guard let first = pieces.first, let last = pieces.last, pieces.count > 1,
            name.count >= first.count + last.count, name.hasPrefix(first), name.hasSuffix(last)
        else { return false }
        // The middle pieces, each at its first place after the previous one, between the fixed ends: taking the
        // earliest place never rules out a match that a later one would allow.
        var rest = name.dropFirst(first.count).dropLast(last.count)
        for piece in pieces.dropFirst().dropLast() where !piece.isEmpty {
            guard let found = rest.range(of: piece) else { return false }
            rest = rest[found.upperBound...]
        }
        return true
    }

    // MARK: - Addresses

    private static func block(_ entry: String) -> Host? {
        if let block = wildcardBlock(entry) { return block }
        let parts = entry.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2 else { return nil }
        var text = String(parts[0])
        // Darwin's short IPv4 blocks ("169.254/16") leave out trailing zero bytes.
        if parts.count == 2, !text.contains(":"), text.split(separator: ".").count < 4,
            text.allSatisfy({ $0.isNumber || $0 == "." })
        {
            text += String(repeating: ".0", count: 4 - text.split(separator: ".").count)
        }
        guard let bytes = address(text) else { return nil }
        let length = parts.count == 2 ? Int(parts[1]) : bytes.count * 8
        guard let length, (0...(bytes.count * 8)).contains(length) else { return nil }
        return .block(bytes: bytes, prefixLength: length)
    }

    /// An IPv4 block written with `*` for its last bytes (`192.168.*`, `10.*.*.*`, `172.16.5.*`), the way people
    /// write them in macOS's proxy exceptions: the block of the bytes before the first `*`.
    private static func wildcardBlock(_ entry: String) -> Host? {
        let parts = entry.split(separator: ".", omittingEmptySubsequences: false)
        guard (2...4).contains(parts.count), let star = parts.firstIndex(of: "*"), star > 0,
            parts[star...].allSatisfy({ $0 == "*" })
        else { return nil }
        var bytes: [UInt8] = []
        for part in parts[..<star] {
            guard !part.isEmpty, part.count <= 3, part.allSatisfy(\.isNumber), let value = UInt8(part) else {
                return nil
            }
            bytes.append(value)
        }
        return .block(bytes: bytes + Array(repeating: 0, count: 4 - bytes.count), prefixLength: bytes.count * 8)
    }

    /// The bytes of an IPv4 or IPv6 literal.
    private static func address(_ text: String) -> [UInt8]? {
        if text.contains(":") { return ipv6(text) }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard !part.isEmpty, part.count <= 3, part.allSatisfy(\.isNumber), let value = UInt8(part) else {
                return nil
            }
            bytes.append(value)
        }
        return bytes
    }

    private static func ipv6(_ text: String) -> [UInt8]? {
        let halves = text.components(separatedBy: "::")
        guard halves.count <= 2 else { return nil }
        func groups(_ part: String) -> [UInt16]? {
            guard !part.isEmpty else { return [] }
            var values: [UInt16] = []
            for group in part.split(separator: ":", omittingEmptySubsequences: false) {
                guard (1...4).contains(group.count), let value = UInt16(group, radix: 16) else { return nil }
                values.append(value)
            }
            return values
        }
        guard let head = groups(halves[0]) else { return nil }
        var all = head
        if halves.count == 2 {
            guard let tail = groups(halves[1]), head.count + tail.count <= 7 else { return nil }
            all += Array(repeating: 0, count: 8 - head.count - tail.count) + tail
        }
        guard all.count == 8 else { return nil }
        return all.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
    }

    /// The first `length` bits of `bytes`, the rest zeroed.
    private static func prefix(_ bytes: [UInt8], _ length: Int) -> [UInt8] {
        bytes.enumerated().map { index, byte in
            let bits = max(0, min(8, length - index * 8))
            return bits == 8 ? byte : byte & UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
        }
    }
}
