/// One entry of `no_proxy` or of a proxy dictionary's `ExceptionsList`: the hosts that go direct.
///
/// - `*`: every host.
/// - A name, optionally with a leading `.` or `*.`: that host and every host below it (`example.com` matches
///   `example.com` and `api.example.com`, not `badexample.com`), case-insensitively.
/// - An IP address: that address; an address with a prefix length (`10.0.0.0/8`, `fd00::/8`, Darwin's short
///   `169.254/16`): every address in that block.
/// - Any of these followed by `:port`: only that port.
public struct NoProxyPattern: Hashable, Sendable {
    private enum Host: Hashable, Sendable {
        case any
        case domain(String)
        case block(bytes: [UInt8], prefixLength: Int)
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
        }
    }

    // MARK: - Addresses

    private static func block(_ entry: String) -> Host? {
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
