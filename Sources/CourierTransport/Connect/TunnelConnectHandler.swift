import CourierHTTP
import Foundation
import NIOCore

/// The proxy refused a `CONNECT` tunnel: its answer (a `407` asking for credentials, a `403`, a `502`) becomes the
/// exchange's response, so that the authentication stage can answer a `407` as for any other — with none of the
/// proxy's other fields (``TunnelRefusal``).
struct ProxyTunnelRefusal: Error {
    var status: Int
    var reason: String
    var headers: [(String, String)]
}

/// Opens a `CONNECT` tunnel through an HTTP proxy before anything else happens on the connection (RFC 9110 §9.3.6):
/// it holds back `channelActive` from the handlers after it — so TLS to the origin starts only inside the
/// tunnel — sends `CONNECT host:port`, reads the proxy's answer, and then lets everything through untouched.
///
/// A `2xx` opens the tunnel; an interim `1xx` (but `101`) is skipped, as for any request (RFC 9110 §15.2), up to
/// ``InformationalResponseLimit``; any other answer fails the connection with a ``ProxyTunnelRefusal``. An answer
/// longer than 64 KiB, or one that is not HTTP, fails it with `badServerResponse`.
final class TunnelConnectHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private static let maximumAnswerLength = 64 * 1024

    private enum State {
        case connecting
        case awaitingAnswer([UInt8])
        case open
        case failed
    }

    private let authority: String
    private let authorization: String?
    private var state = State.connecting
    /// Interim (`1xx`) answers skipped so far.
    private var interimAnswers = 0

    /// - Parameters:
    ///   - authority: The origin's `host:port` (brackets around IPv6).
    ///   - authorization: The `Proxy-Authorization` value for the `CONNECT`, if any.
    init(authority: String, authorization: String?) {
        self.authority = authority
        self.authorization = authorization
    }

    func channelActive(context: ChannelHandlerContext) {
        // Not passed on yet: the handlers after this one see the connection only once the tunnel is open.
        var request = "CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n"
        if let authorization { request += "Proxy-Authorization: \(authorization)\r\n" }
        request += "\r\n"
        state = .awaitingAnswer([])
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: request)), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .awaitingAnswer(var bytes) = state else {
            if case .open = state { context.fireChannelRead(data) }
            return
        }
        var buffer = unwrapInboundIn(data)
        // Out of the state while it grows, so that the append does not copy it; and the search for the blank line
        // resumes where the last read left it (a line end there may complete one). A proxy trickling its answer a
        // byte per read once cost a copy and a scan of the whole answer for each byte: quadratic time.
        state = .failed
        var searchFrom = max(0, bytes.count - 2)
        bytes += buffer.readBytes(length: buffer.readableBytes) ?? []
        while true {
            guard let end = Self.endOfHead(bytes, from: searchFrom) else {
                if bytes.count > Self.maximumAnswerLength {
                    fail(context, .badServerResponse("the proxy's answer to CONNECT is longer than 64 KiB"))
                } else {
                    state = .awaitingAnswer(bytes)
                }
                return
            }
            let statusLine = bytes[..<end].prefix { $0 != UInt8(ascii: "\r") && $0 != UInt8(ascii: "\n") }
            guard ResponseHeadSyntax.isStatusLine(statusLine), ResponseHeadSyntax.isInterim(statusLine) else {
                return answer(bytes, end: end, context: context)
            }
            // An interim answer: the final one follows it (it was taken for a refusal with status 100, which the
            // task then completed with as if it were the origin's response).
            interimAnswers += 1
            guard !InformationalResponseLimit.isExceeded(by: interimAnswers) else {
                return fail(
                    context,
                    .badServerResponse(
                        "the proxy sent more than \(InformationalResponseLimit.maximumCount) interim answers to CONNECT"
                    ))
            }
            bytes = Array(bytes[end...])
            searchFrom = 0
        }
    }

    /// The final answer, whose head ends at `end`: a `2xx` opens the tunnel, anything else refuses it.
    private func answer(_ bytes: [UInt8], end: Int, context: ChannelHandlerContext) {
        // Split as bytes: as Characters, "\r\n" is one grapheme and would never match "\n".
        let lines = bytes[..<end].split(separator: UInt8(ascii: "\n")).map { line in
            String(decoding: line.last == UInt8(ascii: "\r") ? line.dropLast() : line, as: UTF8.self)
        }
        guard let statusLine = lines.first, ResponseHeadSyntax.isStatusLine(Array(statusLine.utf8)),
            let status = Int(statusLine.dropFirst(9).prefix(3))
        else {
            return fail(context, .badServerResponse("the proxy's answer to CONNECT is not HTTP"))
        }
        guard (200..<300).contains(status) else {
            let headers = lines.dropFirst().compactMap { line -> (String, String)? in
                guard let colon = line.firstIndex(of: ":") else { return nil }
                return (
                    line[..<colon].trimmingCharacters(in: .whitespaces),
                    line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                )
            }
            state = .failed
            let reason = String(statusLine.dropFirst(13))
            context.fireErrorCaught(ProxyTunnelRefusal(status: status, reason: reason, headers: headers))
            return
        }
        state = .open
        context.fireChannelActive()
        let rest = bytes[end...]
        if !rest.isEmpty { context.fireChannelRead(wrapInboundOut(context.channel.allocator.buffer(bytes: rest))) }
    }

    private func fail(_ context: ChannelHandlerContext, _ error: TransferError) {
        state = .failed
        context.fireErrorCaught(error)
    }

    /// The index just after the blank line that ends the answer's head, if it arrived, looking at line ends from
    /// `start` on.
    private static func endOfHead(_ bytes: [UInt8], from start: Int) -> Int? {
        var index = start
        while let newline = bytes[index...].firstIndex(of: UInt8(ascii: "\n")) {
            let next = newline + 1
            if next < bytes.count, bytes[next] == UInt8(ascii: "\n") { return next + 1 }
            if next + 1 < bytes.count, bytes[next] == UInt8(ascii: "\r"), bytes[next + 1] == UInt8(ascii: "\n") {
                return next + 2
            }
            index = next
        }
        return nil
    }
}
