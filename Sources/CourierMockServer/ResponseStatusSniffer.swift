/// Finds the final status code at the start of a response byte stream that a ``MockProxy`` passes on unchanged:
/// skips interim (1xx other than 101) heads and gives up (status 0) on anything that does not parse or on a head
/// longer than 64 KiB, so that hostile origins cannot make the proxy buffer without bound.
struct ResponseStatusSniffer {
    private static let maximumHeadBytes = 64 * 1024
    private var pending: [UInt8] = []
    /// The final status, once known; 0 when the response did not parse.
    private(set) var status: Int?

    /// Looks at the next bytes of the response; returns the status when this call determined it.
    mutating func feed(_ bytes: some Sequence<UInt8>) -> Int? {
        guard status == nil else { return nil }
        pending.append(contentsOf: bytes)
        while let headEnd = Self.endOfHead(in: pending) {
            guard let code = Self.statusCode(of: pending[..<headEnd]) else { return finish(0) }
            if (100..<200).contains(code) && code != 101 {
                pending.removeFirst(headEnd)
                continue
            }
            return finish(code)
        }
        if pending.count > Self.maximumHeadBytes {
            return finish(0)
        }
        return nil
    }

    private mutating func finish(_ code: Int) -> Int {
        status = code
        pending = []
        return code
    }

    /// The index just after the first CRLF CRLF.
    private static func endOfHead(in bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4)
        where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index + 4
        }
        return nil
    }

    /// The three digits after `HTTP/x.y `.
    private static func statusCode(of head: ArraySlice<UInt8>) -> Int? {
        let line = head.prefix { $0 != 13 }
        let prefix = Array("HTTP/1.".utf8)
        guard line.count >= 12, line.prefix(prefix.count).elementsEqual(prefix) else { return nil }
        let digits = line.dropFirst(9).prefix(3)
        guard line[line.startIndex + 8] == 32, digits.allSatisfy({ (48...57).contains($0) }) else { return nil }
        return Int(String(decoding: digits, as: UTF8.self))
    }
}
