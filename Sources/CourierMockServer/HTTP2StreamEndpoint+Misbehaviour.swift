import NIOCore
import NIOHTTP2

extension HTTP2StreamEndpoint {
    /// Field names that must not appear in HTTP/2 (RFC 9113 §8.2.2).
    private static let connectionSpecificFields: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade",
    ]

    /// Carries out `misbehaviour` for the request of this stream, whose scripted answer is `response`.
    ///
    /// - Returns: `true` when the misbehaviour replaces the response, `false` when the response is to be written as
    ///   usual.
    func perform(_ misbehaviour: HTTP2Misbehaviour, response: MockResponse) -> Bool {
        switch misbehaviour {
        case .goAway(let errorCode):
            // Streams are odd-numbered from 1: the one before this is two below it, and "none" is 0.
            connection.goAway(lastStreamID: max(0, streamID - 2), errorCode: errorCode)
            return true
        case .goAwayAfterResponse:
            connection.goAwayAfterStream(streamID)
            return false
        case .resetStream(let errorCode):
            reset(errorCode)
            return true
        case .resetAfterHead(let errorCode):
            write(.headers(.init(headers: .init(Self.responseFields(response)))))
            reset(errorCode)
            return true
        case .rawFrames(let bytes, let thenRespond):
            connection.writeBeneathFraming(bytes)
            return !thenRespond
        case .headersWithoutStatus:
            let fields = [(name: "content-type", value: "text/plain")]
            connection.writeBeneathFraming(HTTP2RawFrame.headers(streamID: streamID, fields: fields))
            return true
        }
    }

    /// The HTTP/2 header fields of `response`'s head: `:status`, then its fields with lowercase names and without
    /// connection-specific ones, and a `content-length` unless it has one or is chunked.
    private static func responseFields(_ response: MockResponse) -> [(String, String)] {
        var fields = [(":status", String(response.status))]
        for field in response.headers where !connectionSpecificFields.contains(field.name.lowercased()) {
            fields.append((field.name.lowercased(), field.value))
        }
        if !response.chunked && !response.hasHeader("Content-Length") {
            let length = response.bodyRange.map { $0.upperBound - $0.lowerBound } ?? response.body.length
            fields.append(("content-length", String(length)))
        }
        return fields
    }
}
