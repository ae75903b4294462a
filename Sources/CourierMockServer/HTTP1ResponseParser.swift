import NIOCore
import NIOHTTP1

/// Reads HTTP/1.1 response bytes, as ``ResponseWriter`` produces them, back into response parts: informational heads,
/// the final head, body pieces as they arrive, and the end. Enough HTTP/1.1 for the mock's own output and for
/// scripted raw responses: `Content-Length`, `chunked` (with trailers) and close-delimited bodies; no bodies for
/// `HEAD`, 1xx, 204 and 304.
///
/// NIOHTTP1's decoder cannot be used here: it only works inside a channel pipeline, reading inbound bytes, while
/// these bytes are outbound.
struct HTTP1ResponseParser {
    /// The bytes are not an HTTP/1.1 response.
    struct MalformedResponse: Error {
        var reason: String
    }

    private enum State {
        case head
        case fixedLengthBody(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers([(String, String)])
        case closeDelimitedBody
        case done
    }

    /// The largest head (status line and fields) accepted.
    private static let maximumHeadBytes = 1024 * 1024

    /// Whether the request was `HEAD` (its response has no body, whatever the head says).
    var isHeadRequest = false
    private var state = State.head
    private var pending = ByteBuffer()

    /// Whether the final response has been read completely.
    var isComplete: Bool {
        if case .done = state { return true }
        return false
    }

    /// Whether the body runs until the connection closes: then closing ends the response cleanly.
    var isCloseDelimited: Bool {
        if case .closeDelimitedBody = state { return true }
        return false
    }

    /// Parses `bytes` (after any bytes held back from earlier calls) and returns the parts completed so far. Bytes
    /// after the complete final response are dropped: a stream carries one response.
    mutating func parse(_ bytes: ByteBuffer) throws -> [HTTPServerResponsePart] {
        guard !isComplete else { return [] }
        var bytes = bytes
        pending.writeBuffer(&bytes)
        var parts: [HTTPServerResponsePart] = []
        while try step(into: &parts) {}
        pending.discardReadBytes()
        return parts
    }

    /// Parses one element; returns whether another may follow in the bytes at hand.
    private mutating func step(into parts: inout [HTTPServerResponsePart]) throws -> Bool {
        switch state {
        case .head:
            guard let head = try readHead() else { return false }
            parts.append(.head(head))
            startBody(after: head, into: &parts)
            return true
        case .fixedLengthBody(let remaining):
            guard let piece = readBody(upTo: remaining) else { return false }
            parts.append(.body(.byteBuffer(piece)))
            if remaining == piece.readableBytes {
                parts.append(.end(nil))
                state = .done
            } else {
                state = .fixedLengthBody(remaining: remaining - piece.readableBytes)
            }
            return true
        case .closeDelimitedBody:
            guard let piece = readBody(upTo: Int.max) else { return false }
            parts.append(.body(.byteBuffer(piece)))
            return false
        case .chunkSize:
            guard let line = readLine() else { return false }
            let sizeText = line.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
            guard let size = Int(sizeText.trimmingSpaces(), radix: 16), size >= 0 else {
                throw MalformedResponse(reason: "chunk size \(line)")
            }
            state = size == 0 ? .trailers([]) : .chunkData(remaining: size)
            return true
        case .chunkData(let remaining):
            guard let piece = readBody(upTo: remaining) else { return false }
            parts.append(.body(.byteBuffer(piece)))
            let left = remaining - piece.readableBytes
            state = left == 0 ? .chunkDataEnd : .chunkData(remaining: left)
            return true
        case .chunkDataEnd:
            guard let line = readLine() else { return false }
            guard line.isEmpty else { throw MalformedResponse(reason: "chunk not followed by CRLF") }
            state = .chunkSize
            return true
        case .trailers(var fields):
            guard let line = readLine() else { return false }
            if line.isEmpty {
                parts.append(.end(fields.isEmpty ? nil : HTTPHeaders(fields)))
                state = .done
                return false
            }
            fields.append(try Self.field(line))
            state = .trailers(fields)
            return true
        case .done:
            return false
        }
    }

    private mutating func startBody(after head: HTTPResponseHead, into parts: inout [HTTPServerResponsePart]) {
        let status = head.status.code
        if (100..<200).contains(status) {
            // Informational: another head follows.
            return
        }
        if isHeadRequest || status == 204 || status == 304 {
            parts.append(.end(nil))
            state = .done
        } else if head.headers["Transfer-Encoding"].contains(where: { $0.lowercased().contains("chunked") }) {
            state = .chunkSize
        } else if let length = head.headers.first(name: "Content-Length").flatMap({ Int($0.trimmingSpaces()) }) {
            if length == 0 {
                parts.append(.end(nil))
                state = .done
            } else {
                state = .fixedLengthBody(remaining: length)
            }
        } else {
            state = .closeDelimitedBody
        }
    }

    /// Reads a complete head, or returns `nil` while its end has not arrived.
    private mutating func readHead() throws -> HTTPResponseHead? {
        guard let end = Self.firstIndex(of: [13, 10, 13, 10], in: pending) else {
            if pending.readableBytes > Self.maximumHeadBytes {
                throw MalformedResponse(reason: "head too large")
            }
            return nil
        }
        let text = pending.readString(length: end - pending.readerIndex) ?? ""
        pending.moveReaderIndex(forwardBy: 4)
        var lines = text.components(separatedBy: "\r\n")[...]
        let statusLine = lines.popFirst() ?? ""
        let words = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard words.count >= 2, words[0].hasPrefix("HTTP/1."), let status = Int(words[1]), (100..<1000).contains(status)
        else {
            throw MalformedResponse(reason: "status line \(statusLine)")
        }
        let fields = try lines.map(Self.field)
        let reason = words.count > 2 ? String(words[2]) : ""
        return HTTPResponseHead(
            version: .http1_1,
            status: HTTPResponseStatus(statusCode: status, reasonPhrase: reason),
            headers: HTTPHeaders(fields)
        )
    }

    private static func field(_ line: String) throws -> (String, String) {
        guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
            throw MalformedResponse(reason: "header field \(line)")
        }
        return (String(line[..<colon]), String(line[line.index(after: colon)...]).trimmingSpaces())
    }

    /// Reads a line without its CRLF, or returns `nil` while its end has not arrived.
    private mutating func readLine() -> String? {
        guard let end = Self.firstIndex(of: [13, 10], in: pending) else { return nil }
        let line = pending.readString(length: end - pending.readerIndex) ?? ""
        pending.moveReaderIndex(forwardBy: 2)
        return line
    }

    /// Reads up to `limit` body bytes, or returns `nil` when none are at hand.
    private mutating func readBody(upTo limit: Int) -> ByteBuffer? {
        guard pending.readableBytes > 0 else { return nil }
        return pending.readSlice(length: min(limit, pending.readableBytes))
    }

    /// Where `needle` first starts among `buffer`'s readable bytes, as an index of the buffer (like its reader index).
    private static func firstIndex(of needle: [UInt8], in buffer: ByteBuffer) -> Int? {
        let view = buffer.readableBytesView
        guard view.count >= needle.count else { return nil }
        var index = view.startIndex
        while index + needle.count <= view.endIndex {
            if view[index] == needle[0] && view[index..<(index + needle.count)].elementsEqual(needle) {
                return index
            }
            index += 1
        }
        return nil
    }
}
