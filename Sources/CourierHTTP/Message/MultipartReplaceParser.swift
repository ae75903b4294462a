/// Splits a `multipart/x-mixed-replace` body (a server push stream: each part replaces the previous one, as in
/// MJPEG cameras and old "server push" pages) into parts, incrementally, as the body arrives.
///
/// The body is RFC 2046 multipart: an optional preamble, then for each part a delimiter line `--boundary`, the part's
/// header fields, an empty line and its body, which ends at the next `CRLF--boundary`; `--boundary--` closes the
/// stream. Bare LF line ends and padding after a delimiter are accepted, as browsers do. Body bytes are handed on as
/// they arrive, holding back only what could be the start of a delimiter. A part head larger than
/// ``maximumHeadSize`` is `cannotParseResponse`; a stream that ends inside a part ends that part (servers often
/// just close).
public struct MultipartReplaceParser: Sendable {
    /// One header field of a part.
    public struct Field: Hashable, Sendable {
        public var name: String
        public var value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// What the body held, in order.
    public enum Event: Hashable, Sendable {
        /// A part begins, with these header fields.
        case partHead([Field])
        /// Bytes of the current part's body.
        case partBody([UInt8])
        /// The current part ended.
        case partEnd
    }

    /// The most bytes a part's header fields may take.
    public static let maximumHeadSize = 64 * 1024

    private enum State: Sendable {
        case preamble, afterDelimiter, head, body, closed
    }

    /// `--boundary`.
    private let delimiter: [UInt8]
    private var buffer: [UInt8] = []
    /// Where the bytes not parsed yet start in ``buffer``. Parsing moves it on; ``feed(_:)`` drops the parsed bytes
    /// once, at its end: dropping them at every step moved the rest of the buffer each time, which made a read that
    /// holds many tiny parts (a hostile server's) cost its length times the number of parts.
    private var position = 0
    private var state = State.preamble
    private var fields: [Field] = []
    private var headBytes = 0
    /// Whether no byte of the current part's body has been handed on yet: the line end that closed its head then
    /// doubles as the line end before a delimiter (RFC 2046: a part's body is optional, `headers CRLF--boundary` is
    /// a part with no body), so that an empty part ends there rather than taking in the next part.
    private var atBodyStart = false

    /// A parser for a response whose `Content-Type` is `contentType`; `nil` unless it is `multipart/x-mixed-replace`
    /// with a usable `boundary` (1 to 70 characters, RFC 2046 §5.1.1).
    public init?(contentType: String) {
        // Every response's Content-Type is asked: most are not multipart at all, and a byte comparison says so
        // without parsing the media type.
        guard Self.startsWithMultipart(contentType.utf8),
            MediaType(parsing: contentType).mimeType == "multipart/x-mixed-replace",
            let boundary = HeaderParameters(parsing: contentType).value(for: "boundary"),
            (1...70).contains(boundary.utf8.count)
        else { return nil }
        delimiter = Array("--\(boundary)".utf8)
    }

    /// Whether a header value starts, after spaces and tabs, with `multipart/` in any case.
    private static func startsWithMultipart(_ value: String.UTF8View) -> Bool {
        let prefix = "multipart/".utf8
        var bytes = value.drop { $0 == 0x20 || $0 == 0x09 }.makeIterator()
        for expected in prefix {
            guard let byte = bytes.next(), byte | 0x20 == expected | 0x20 else { return false }
        }
        return true
    }

    /// Takes the next bytes of the body and returns what they completed.
    public mutating func feed<Bytes: Collection>(_ bytes: Bytes) throws(TransferError) -> [Event]
    where Bytes.Element == UInt8 {
        buffer.append(contentsOf: bytes)
        var events: [Event] = []
        while try step(&events) {}
        buffer.removeFirst(position)
        position = 0
        return events
    }

    /// The body ended: a part still open ends with what it has.
    public mutating func finish() -> [Event] {
        defer {
            buffer = []
            position = 0
            state = .closed
        }
        guard case .body = state else { return [] }
        return position < buffer.count ? [.partBody(Array(buffer[position...])), .partEnd] : [.partEnd]
    }

    /// Makes one step of progress; `false` when more bytes are needed.
    private mutating func step(_ events: inout [Event]) throws(TransferError) -> Bool {
        switch state {
        case .preamble:
            guard let start = Self.find(delimiter, in: buffer, from: position) else {
                position = max(position, buffer.count - delimiter.count)
                return false
            }
            position = start + delimiter.count
            state = .afterDelimiter
            return true
        case .afterDelimiter:
            var index = position
            while index < buffer.count, buffer[index] == UInt8(ascii: " ") || buffer[index] == UInt8(ascii: "\t") {
                index += 1
            }
            guard index + 1 < buffer.count else { return false }
            if buffer[index] == UInt8(ascii: "-") && buffer[index + 1] == UInt8(ascii: "-") {
                state = .closed
                buffer = []
                position = 0
                return false
            }
            if buffer[index] == UInt8(ascii: "\r") && buffer[index + 1] == UInt8(ascii: "\n") {
                index += 2
            } else if buffer[index] == UInt8(ascii: "\n") {
                index += 1
            } else {
                throw .cannotParseResponse("a multipart/x-mixed-replace delimiter is followed by other text")
            }
            position = index
            state = .head
            fields = []
            headBytes = 0
            return true
        case .head:
            guard let newline = buffer[position...].firstIndex(of: UInt8(ascii: "\n")) else {
                guard headBytes + (buffer.count - position) <= Self.maximumHeadSize else { throw Self.headTooLarge }
                return false
            }
            headBytes += newline - position + 1
            guard headBytes <= Self.maximumHeadSize else { throw Self.headTooLarge }
            var line = buffer[position..<newline]
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            position = newline + 1
            if line.isEmpty {
                events.append(.partHead(fields))
                state = .body
                atBodyStart = true
                return true
            }
            if let colon = line.firstIndex(of: UInt8(ascii: ":")) {
                let name = HeaderParameters.trim(String(decoding: line[..<colon], as: UTF8.self))
                let value = HeaderParameters.trim(String(decoding: line[(colon + 1)...], as: UTF8.self))
                if !name.isEmpty { fields.append(Field(name: name, value: value)) }
            }
            return true
        case .body:
            if let start = Self.find(
                delimiter, in: buffer, from: position, afterLineEnd: true, lineEndBefore: atBodyStart)
            {
                var end = start - 1  // the LF before the delimiter
                if end > position && buffer[end - 1] == UInt8(ascii: "\r") { end -= 1 }
                if end > position { events.append(.partBody(Array(buffer[position..<end]))) }
                events.append(.partEnd)
                position = start + delimiter.count
                state = .afterDelimiter
                return true
            }
            // Everything but what could still become CRLF + the delimiter.
            let keep = delimiter.count + 2
            if buffer.count - position > keep {
                events.append(.partBody(Array(buffer[position..<(buffer.count - keep)])))
                position = buffer.count - keep
                atBodyStart = false
            }
            return false
        case .closed:
            buffer = []
            position = 0
            return false
        }
    }

    private static var headTooLarge: TransferError {
        .cannotParseResponse("a multipart/x-mixed-replace part has more than \(maximumHeadSize) bytes of header fields")
    }

    /// The index where `pattern` starts in `bytes` at or after `from` (and, with `afterLineEnd`, right after a LF at
    /// or after `from`: a LF parsed already belonged to something else — unless `lineEndBefore` says the bytes
    /// parsed just before `from` ended a line that may start the pattern, when `pattern` may start at `from`).
    private static func find(
        _ pattern: [UInt8], in bytes: [UInt8], from: Int, afterLineEnd: Bool = false, lineEndBefore: Bool = false
    ) -> Int? {
        guard let first = pattern.first, bytes.count - from >= pattern.count else { return nil }
        var index = from
        let last = bytes.count - pattern.count
        while index <= last {
            guard let candidate = bytes[index...last].firstIndex(of: first) else { return nil }
            let atLineStart =
                candidate == from ? lineEndBefore : bytes[candidate - 1] == UInt8(ascii: "\n")
            if (!afterLineEnd || atLineStart)
                && bytes[candidate..<(candidate + pattern.count)].elementsEqual(pattern)
            {
                return candidate
            }
            index = candidate + 1
        }
        return nil
    }
}
