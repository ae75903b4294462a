import NIOCore
import NIOHTTP1

/// The serialized status line and header fields of a ``MockResponse``, plus the framing decisions derived from them.
struct ResponseHead {
    /// Whether a body (or chunked framing) follows the head.
    let hasBody: Bool
    /// Whether the body is framed with `Transfer-Encoding: chunked`.
    let isChunked: Bool
    /// The serialized head, ending with the empty line.
    let bytes: String

    /// Serializes the head of `response`.
    ///
    /// - Parameters:
    ///   - response: The response to serialize.
    ///   - bodyLength: The number of body bytes the response represents (the range length for partial content).
    ///   - isHeadRequest: Whether the request was a `HEAD` request (headers only).
    ///   - closing: Whether the connection closes after this response (`Connection: close` is added if absent).
    init(response: MockResponse, bodyLength: Int64, isHeadRequest: Bool, closing: Bool) {
        let status = response.status
        let forbidsBody = (100..<200).contains(status) || status == 204 || status == 304
        self.isChunked = response.chunked
        self.hasBody = !forbidsBody && !isHeadRequest

        let reason = response.reason ?? HTTPResponseStatus(statusCode: status).reasonPhrase
        var text = "HTTP/1.1 \(status) \(reason)\r\n"
        for header in response.headers {
            text += "\(header.name): \(header.value)\r\n"
        }
        if response.chunked {
            if !response.hasHeader("Transfer-Encoding") && !forbidsBody {
                text += "Transfer-Encoding: chunked\r\n"
            }
        } else if !response.hasHeader("Content-Length") && !forbidsBody {
            text += "Content-Length: \(bodyLength)\r\n"
        }
        if closing && !response.hasHeader("Connection") {
            text += "Connection: close\r\n"
        }
        text += "\r\n"
        self.bytes = text
    }
}
