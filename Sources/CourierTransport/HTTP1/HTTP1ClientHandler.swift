import CourierHTTP
import Foundation
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOSSL

/// Runs one exchange at a time on an HTTP/1.1 connection, or the one exchange of an HTTP/2 stream, and streams its
/// events to the exchange's consumer.
///
/// It speaks NIOHTTP1's message parts, so the same handler serves both protocols: on an HTTP/2 stream
/// NIOHTTP2's `HTTP2FramePayloadToHTTP1ClientCodec` translates frames to those parts (``isStream``). A stream runs
/// exactly one exchange; its end frees the stream's slot in the pool instead of parking the connection.
///
/// It lives on the connection's event loop. Backpressure: while the exchange is paused, the outbound `read`
/// is held back, so the socket is not read and no buffer grows; the request timer does not run either.
/// A gzip, deflate or brotli body is decoded here, one bounded step at a time (see ``ContentDecoder``): while
/// paused no step runs, and no read is issued until the compressed bytes already received are decoded.
final class HTTP1ClientHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart

    /// Everything that belongs to the running exchange, not to the connection: its timers, read demand, body
    /// decoder and timeline. A class, so that the handler updates it in place: as a struct in `State` every change
    /// copied it whole (the timeline is large) and wrote it back, several times per response.
    private final class Active {
        let exchange: TransportExchange
        let isReused: Bool
        /// Sends the body; `nil` for a request without one (most are), whose end goes out with its head.
        let bodyWriter: HTTP1RequestBodyWriter?
        /// The end of a request without a body was written.
        var endWritten = false
        /// A head arrived, an informational one included: the server answered this request, so it is never sent
        /// again on another connection (the app would see its `103 Early Hints` twice, and the server would act on
        /// a request it already took on). A stale keep-alive connection closes before any response.
        var responseStarted = false
        /// The informational (1xx) heads received so far; bounded (``InformationalResponseLimit``).
        var informationalCount = 0
        /// The response's body ends where the connection closes (no length, not chunked): over TLS only a close
        /// with `close_notify` completes it.
        var endsAtClose = false
        /// A `101` to a request that takes the connection over: the handover happens at the head's end.
        var switchingProtocols = false
        var keepAlive = true
        /// Decodes the body when the response is gzip-, deflate- or brotli-encoded.
        var decoder: ContentDecoder?
        /// The response ended while compressed input still waited to be decoded.
        var endPending = false
        /// Whether the exchange asked not to be read from (backpressure).
        var paused = false
        /// The last byte sent or received, for the request (idle) timeout.
        var lastActivity = NIODeadline.now()
        /// The deadline whose timer fired late and was given one more turn of the loop (``LateTimerGrace``).
        var lateDeadline: NIODeadline?
        /// Draining (a follow-up request wants this connection): bytes that may still be dropped before the
        /// connection is closed instead.
        var drainBudget: Int?
        /// `nil` when nobody observes the exchange's timeline (``TransportRequest/observesTimeline``): every
        /// recording below then skips, clock reading included.
        var timeline: TransportTimeline?

        init(
            exchange: TransportExchange, isReused: Bool, bodyWriter: HTTP1RequestBodyWriter?,
            timeline: TransportTimeline?
        ) {
            self.exchange = exchange
            self.isReused = isReused
            self.bodyWriter = bodyWriter
            self.timeline = timeline
        }

        /// Whether the whole request went out.
        var requestWritten: Bool { bodyWriter?.isEnded ?? endWritten }
    }

    private enum State {
        case idle
        case active(Active)
        case closed
    }

    private var state: State = .idle
    private var context: ChannelHandlerContext?
    /// Kept past `handlerRemoved`: a body that arrived whole before the connection closed is still decoded.
    private var eventLoop: (any EventLoop)?
    private var allocator = ByteBufferAllocator()
    /// A read the channel asked for while the exchange was paused (the connection's read demand).
    private var pendingRead = false
    private var decodeScheduled = false
    /// A stream's channel closed while its exchange's last compressed bytes still waited to be decoded: the close is
    /// reported (``onClosed``) when the exchange ends, not before. An HTTP/2 connection finds a stream's handler by
    /// its exchange (for pause, resume, cancel and drain) only until it hears of the close, and nothing else holds a
    /// handler whose channel is gone: told early, it would drop a handler that still decodes, and the exchange would
    /// never end.
    private var closeReportDeferred = false
    /// TLS ended without `close_notify` (NIOSSL's `uncleanShutdown`, told just before the close): a body framed by
    /// the close may have been cut short by whoever ended the TCP connection.
    private var closedWithoutCloseNotify = false
    private var idleTimer: Scheduled<Void>?
    /// The request (idle) timeout: fires when the running exchange sent and received nothing for its request's
    /// `idleTimeout`. One timer serves the connection's successive exchanges (see ``armRequestTimer()``).
    private var requestTimer: Scheduled<Void>?
    /// When ``requestTimer`` fires.
    private var requestTimerDeadline = NIODeadline.distantFuture
    private var idleSince = NIODeadline.now()
    private let endpoint: Endpoint
    private let idleConnectionTimeout: TimeAmount
    private let protocolName: String
    /// Whether this handler runs one HTTP/2 stream rather than an HTTP/1.1 connection.
    let isStream: Bool
    /// Whether a file's request body may go out as `FileRegion`s, with `sendfile(2)`: only on a plain TCP
    /// connection straight to the server, where nothing after the codec needs the bytes themselves.
    let sendsFileRegions: Bool
    /// For a stream: the connection it runs on, for what it knows about the stream's failures (see
    /// ``HTTP2StreamHost``).
    var streamHost: (any HTTP2StreamHost)?
    /// For a stream: it still holds its slot in the connection's count of open streams (see
    /// `HTTP2Connection.open`).
    var holdsStreamSlot = false
    /// How the connection was set up; copied into its first exchange's timeline.
    var establishment: ConnectionEstablishment?
    /// Called when the connection can take another request.
    var onReusable: (() -> Void)?
    /// Called once when the channel closes.
    var onClosed: (() -> Void)?
    /// Called when the connection was handed over after `101 Switching Protocols`: it is no longer the pool's.
    var onUpgraded: (() -> Void)?

    init(
        endpoint: Endpoint, idleConnectionTimeout: TimeAmount, protocolName: String, isStream: Bool = false,
        sendsFileRegions: Bool = false
    ) {
        self.endpoint = endpoint
        self.idleConnectionTimeout = idleConnectionTimeout
        self.protocolName = protocolName
        self.isStream = isStream
        self.sendsFileRegions = sendsFileRegions && !isStream
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        self.eventLoop = context.eventLoop
        self.allocator = context.channel.allocator
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    /// The event loop's clock, which its scheduled tasks run by: the timers' deadlines and their "is it due yet"
    /// checks must use it (`NIODeadline.now()` on a real loop; an embedded test loop's virtual time).
    private var now: NIODeadline { eventLoop?.now ?? .now() }

    /// Whether the running exchange is paused.
    private var paused: Bool {
        if case .active(let active) = state { return active.paused }
        return false
    }

    // MARK: - Commands (on the event loop)

    /// Starts `exchange`. A connection that is no longer usable fails it as retryable.
    func start(_ exchange: TransportExchange, isReused: Bool) {
        guard case .idle = state, let context, context.channel.isActive else {
            exchange.connectionFailed(.networkConnectionLost("the connection closed"), retryable: isReused)
            return
        }
        if let cancellation = exchange.pendingCancellation {
            // Cancelled after the lease but before this hop: send nothing, and give the connection back.
            exchange.connectionFailed(cancellation, retryable: false)
            if isStream {
                state = .closed
                context.close(promise: nil)
            } else {
                armIdleTimer()
            }
            onReusable?()
            return
        }
        let request = exchange.request
        let writer = makeBodyWriter(for: request, context: context)
        let active = Active(
            exchange: exchange, isReused: isReused, bodyWriter: writer,
            timeline: request.observesTimeline ? startTimeline(of: exchange, isReused: isReused, context: context) : nil
        )
        active.paused = exchange.isPausedForHandler
        // A task suspended before its connection was ready sends no body until it is resumed.
        writer?.setPaused(active.paused)
        state = .active(active)
        writeHead(request, context: context)
        if let writer {
            writer.begin()
        } else {
            active.endWritten = true
            context.writeAndFlush(NIOAny(HTTPClientRequestPart.end(nil)), promise: nil)
            recordRequestEnd()
        }
        armRequestTimer()
    }

    /// Cancels `exchange` if it is the one running: the connection is closed (Darwin does the same).
    func cancel(_ exchange: TransportExchange, error: TransferError) {
        guard case .active(let active) = state, active.exchange === exchange else { return }
        fail(error, retryable: false)
    }

    /// Drops the rest of `exchange`'s response so that the connection can serve the next request; beyond `limit`
    /// bytes (or with a request body still being sent) the connection is closed instead.
    func drain(_ exchange: TransportExchange, limit: Int) {
        guard case .active(let active) = state, active.exchange === exchange else { return }
        if isStream && !active.endPending {
            // Resetting a stream costs one frame and leaves the connection's other streams alone: cheaper than
            // reading a rest nobody wants.
            fail(.cancelled("drained"), retryable: false)
            return
        }
        guard active.requestWritten, active.keepAlive, !active.endsAtClose else {
            // The connection cannot serve another request anyway (a body that ends at the close ends it too): close
            // it now rather than read the rest, or wait for a server that keeps it open.
            fail(.cancelled("drained a response whose connection cannot be reused"), retryable: false)
            return
        }
        active.drainBudget = limit
        active.paused = false
        // Compressed input need not be decoded to be dropped.
        active.decoder = nil
        let endPending = active.endPending
        if endPending {
            endResponse(active, context: context)
            return
        }
        armRequestTimer()
        if pendingRead, let context {
            pendingRead = false
            context.read()
        }
    }

    /// Pauses or resumes reading for `exchange`.
    func setPaused(_ newValue: Bool, for exchange: TransportExchange) {
        guard case .active(let active) = state, active.exchange === exchange, active.paused != newValue,
            active.drainBudget == nil
        else { return }
        active.paused = newValue
        // The request's body stops with the response: a suspended upload sends nothing more (nor reports progress).
        active.bodyWriter?.setPaused(newValue)
        // Pausing leaves the timer: when it fires it finds the exchange paused and stops.
        if !newValue {
            armRequestTimer()
            if active.decoder != nil {
                decodeNextStep()
            } else if pendingRead, let context {
                pendingRead = false
                context.read()
            }
        }
    }

    /// Bytes arrived from the socket (see ``ReadActivityHandler``): they reset the request timeout, even when they
    /// do not complete a head or a body part yet.
    func noteReadActivity() {
        armRequestTimer()
    }

    // MARK: - Channel events

    func read(context: ChannelHandlerContext) {
        if paused || hasCompressedInput {
            pendingRead = true
        } else {
            context.read()
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        guard case .active = state else {
            // Bytes on an idle connection: the server is confused; never reuse it.
            if case .idle = state { context.close(promise: nil) }
            return
        }
        armRequestTimer()
        guard case .active(let active) = state else { return }
        switch part {
        case .head(let head):
            active.responseStarted = true
            if head.status.code >= 100 && head.status.code < 200 && head.status.code != 101 {
                // Each one restarted the request timeout: without a bound, a server that sends them for ever would
                // keep the task alive until its resource timeout.
                active.informationalCount += 1
                if InformationalResponseLimit.isExceeded(by: active.informationalCount) {
                    fail(
                        .badServerResponse(
                            "the server sent more than \(InformationalResponseLimit.maximumCount) informational (1xx) "
                                + "responses without a final one"),
                        retryable: false)
                    return
                }
                // Informational responses are never delivered as the response; 100 Continue is the body writer's.
                if head.status.code == 100 {
                    active.bodyWriter?.continueReceived()
                } else if active.drainBudget == nil {
                    active.exchange.consumer.transportDidReceiveInformationalHead(
                        makeHead(head, active: active))
                }
                return
            }
            if head.status.code == 101 {
                // What follows is another protocol. A request that asked to take the connection over (a WebSocket
                // handshake) gets it at the end of this head; for any other it is a server's mistake.
                let asked = active.exchange.request.headers.contains { HeaderName.equal($0.0, "Upgrade") }
                if asked, active.exchange.request.upgrade != nil, !isStream, active.drainBudget == nil {
                    active.switchingProtocols = true
                    active.timeline?.responseStart = Date()
                    cancelRequestTimer()
                    active.exchange.consumer.transportDidReceiveHead(makeHead(head, active: active))
                    return
                }
                fail(
                    .badServerResponse(
                        asked
                            ? "the server switched protocols (101), which a data task cannot speak"
                            : "the server answered 101 Switching Protocols to a request that asked for no upgrade"),
                    retryable: false)
                return
            }
            let transferEncoding = head.headers["Transfer-Encoding"]
            if let coding = TransferCodingRules.unrequestedCoding(in: transferEncoding) {
                // Only chunked is ever asked for (no TE field is sent): the body would reach the app still coded.
                fail(
                    .badServerResponse("the response uses the transfer coding \(coding), which was not asked for"),
                    retryable: false)
                return
            }
            active.bodyWriter?.finalResponseArrived()
            active.endsAtClose =
                !isStream
                && ResponseBodyFraming.endsAtClose(
                    status: Int(head.status.code), requestMethod: active.exchange.request.method,
                    transferEncoding: transferEncoding,
                    hasContentLength: head.headers.contains(name: "Content-Length"))
            // "HTTP/1.1 200 " + reason, as the codec read it (a lenient head rewritten strictly).
            active.timeline?.responseHeaderBytesReceived = Self.serializedSize(
                startLine: 13 + head.status.reasonPhrase.utf8.count, headers: head.headers)
            // Already false when the codec saw bytes after this response in the read that carries it.
            active.keepAlive = active.keepAlive && Self.persists(head)
            active.timeline?.responseStart = Date()
            if let coding = ContentCoding.automaticDecoding(head.headers["Content-Encoding"]) {
                active.decoder = ContentDecoder(
                    coding: coding,
                    maximumRatio: active.exchange.request.maximumDecompressionRatio
                )
            }
            guard active.drainBudget == nil else { return }
            active.exchange.consumer.transportDidReceiveHead(makeHead(head, active: active))
        case .body(let buffer):
            active.timeline?.responseBodyBytesReceived += Int64(buffer.readableBytes)
            if let budget = active.drainBudget {
                if buffer.readableBytes > budget {
                    // Too much to drop: a new connection is cheaper than reading it.
                    fail(.cancelled("drained"), retryable: false)
                    return
                }
                active.drainBudget = budget - buffer.readableBytes
                return
            }
            if let decoder = active.decoder {
                decoder.append(buffer)
                decodeNextStep()
            } else {
                active.timeline?.responseBodyBytesDecoded += Int64(buffer.readableBytes)
                active.exchange.consumer.transportDidReceiveBodyPart(buffer)
            }
        case .end:
            if active.switchingProtocols {
                switchProtocols(active, context: context)
                return
            }
            if active.endsAtClose && closedWithoutCloseNotify && active.drainBudget == nil {
                // RFC 9112 §9.8: a body without length or chunks is complete only with a valid closure alert. A bare
                // TCP close (anyone on the path can send a FIN) would otherwise pass a truncated body, or a download
                // file, as complete. Lost, as for a length-framed body cut short (curl fails here too). A drained
                // body is dropped anyway.
                fail(
                    .networkConnectionLost(
                        "the connection to \(endpoint) closed without TLS's close_notify: the body, which only the "
                            + "close ends, may be cut short"),
                    retryable: false)
                return
            }
            if let decoder = active.decoder, decoder.canStep {
                // Finished once the compressed input is decoded, at the consumer's pace.
                active.endPending = true
                return
            }
            endResponse(active, context: context)
        }
    }

    /// Hands the connection over after `101 Switching Protocols`: an ``UpgradeBuffer`` takes the place of the HTTP
    /// handlers (the codec passes it the bytes behind the head as it leaves), the pool lets go of the connection,
    /// and the exchange finishes with the upgraded connection in its request's slot.
    private func switchProtocols(_ active: Active, context: ChannelHandlerContext) {
        state = .closed
        idleTimer?.cancel()
        idleTimer = nil
        let pipeline = context.pipeline.syncOperations
        let buffer = UpgradeBuffer()
        do {
            try pipeline.addHandler(buffer, position: .before(self))
            _ = try pipeline.removeHandler(pipeline.handler(type: HTTP1ClientCodec.self))
            _ = try pipeline.removeHandler(pipeline.handler(type: ReadActivityHandler.self))
        } catch {
            active.exchange.connectionFailed(
                .networkConnectionLost("cannot hand the connection to \(endpoint) over: \(error)"), retryable: false)
            context.close(promise: nil)
            return
        }
        active.timeline?.responseEnd = Date()
        storeTimeline(of: active)
        let upgraded = UpgradedConnection(channel: context.channel, buffer: buffer)
        onUpgraded?()
        onUpgraded = nil
        onClosed = nil
        onReusable = nil
        active.exchange.request.upgrade?.deliver(upgraded)
        pipeline.removeHandler(context: context, promise: nil)
        active.exchange.finish()
    }

    /// Delivers the end of the response and gives the connection back (or closes it).
    private func endResponse(_ ended: Active, context: ChannelHandlerContext?) {
        let active = ended
        if let decoder = active.decoder {
            do {
                try decoder.finish()
            } catch {
                fail(error, retryable: false)
                return
            }
        }
        // The request timer stays for the connection's next exchange; if it fires first, it finds none and stops.
        active.timeline?.responseEnd = Date()
        if isStream {
            cancelRequestTimer()  // a stream has no next exchange
            // A stream runs one exchange. One whose request is still being sent (the server answered early) is
            // reset; a finished one closes by itself. Either way its slot in the pool is free.
            state = .closed
            storeTimeline(of: active)
            if !active.requestWritten {
                active.bodyWriter?.abandon()
                context?.close(promise: nil)
            }
            onReusable?()
            if closeReportDeferred { reportClosed() }
            active.exchange.finish()
            return
        }
        let isOpen = context?.channel.isActive ?? false
        // A connection that carried an upgrade request the server did not switch is not reused: many servers (and
        // llhttp) stop parsing a connection after an upgrade request, whatever they answered.
        let reusable =
            active.keepAlive && active.requestWritten && isOpen && active.exchange.request.upgrade == nil
        state = isOpen ? .idle : .closed
        storeTimeline(of: active)
        // A body still being sent (the server answered early) stops with the connection, which closes under it.
        if !active.requestWritten { active.bodyWriter?.abandon() }
        if reusable {
            armIdleTimer()
            onReusable?()
        } else {
            context?.close(promise: nil)
        }
        active.exchange.finish()
        if pendingRead, isOpen, let context {
            // A read held back while the end waited for the decoder: an idle connection still reads, to notice
            // the server closing it.
            pendingRead = false
            context.read()
        }
    }

    // MARK: - Decoding

    /// Whether compressed bytes wait to be decoded: no more are read from the socket until they are.
    private var hasCompressedInput: Bool {
        guard case .active(let active) = state, let decoder = active.decoder else { return false }
        return decoder.canStep
    }

    /// Decodes one step of the compressed input and delivers it. Further steps run as separate event-loop
    /// tasks, so a pause asked for from another thread lands between two steps; once the input is used up, the
    /// held-back read is issued, or the response ends.
    private func decodeNextStep() {
        guard case .active(let active) = state, let decoder = active.decoder, !active.paused else { return }
        if decoder.canStep {
            let output: ByteBuffer
            do {
                output = try decoder.step(allocator: allocator)
            } catch {
                fail(error, retryable: false)
                return
            }
            active.timeline?.responseBodyBytesDecoded += Int64(output.readableBytes)
            armRequestTimer()
            if output.readableBytes > 0 {
                active.exchange.consumer.transportDidReceiveBodyPart(output)
            }
            if decoder.canStep {
                scheduleDecodeStep()
                return
            }
        }
        // The consumer may have paused meanwhile; read the state afresh.
        guard case .active(let current) = state, current.exchange === active.exchange else { return }
        if current.endPending {
            endResponse(current, context: context)
        } else if pendingRead && !current.paused, let context {
            pendingRead = false
            context.read()
        }
    }

    private func scheduleDecodeStep() {
        guard !decodeScheduled, let eventLoop else { return }
        decodeScheduled = true
        eventLoop.assumeIsolated().execute { [weak self] in
            guard let self else { return }
            self.decodeScheduled = false
            self.decodeNextStep()
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Many servers end TCP without TLS's close_notify; NIOSSL says so just before the close reaches the
        // pipeline. The close decides, as over plain TCP: a body framed by a length or by chunks that is cut short
        // fails with networkConnectionLost (resumable), not secureConnectionFailed; one framed by the close itself
        // fails the same way at its end (see `.end`), as nothing proves it whole.
        if let tls = error as? NIOSSLError, case .uncleanShutdown = tls {
            closedWithoutCloseNotify = true
            return
        }
        guard case .active(let active) = state else {
            context.close(promise: nil)
            return
        }
        if isStream, active.endPending, let closed = error as? NIOHTTP2Errors.StreamClosed,
            closed.errorCode == .noError
        {
            // The whole response arrived (END_STREAM) before the server reset the stream with NO_ERROR: it asks the
            // client to stop sending a request body it does not need, and RFC 9113 §8.1 says the response must not be
            // discarded for it. Its compressed rest is still decoded; the close that follows is told to the
            // connection when the exchange ends (see `channelInactive`).
            active.bodyWriter?.abandon()
            return
        }
        let mapped = streamHost?.streamFailure(error) ?? TransportErrorMapping.exchangeError(error, endpoint: endpoint)
        // A reset on a reused connection before any response byte is the same stale keep-alive case as a close.
        let staleConnection =
            error is IOError && active.isReused && !active.responseStarted && active.exchange.request.isIdempotent
        let unprocessedStream = isStream && !active.responseStarted && streamHost?.streamWasUnprocessed(error) == true
        fail(mapped, retryable: staleConnection || unprocessedStream)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is HTTP1ClientCodec.BytesAfterResponse else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        // The server sent more than its response: its framing cannot be trusted, and the connection is not reused
        // (the response under way, if any, still ends normally).
        switch state {
        case .active(let active): active.keepAlive = false
        case .idle: context.close(promise: nil)
        default: break
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if case .active(let active) = state, context.channel.isWritable {
            active.bodyWriter?.writabilityChanged()
        }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        idleTimer?.cancel()
        cancelRequestTimer()
        if case .active(let active) = state, active.endPending {
            // The whole body arrived; what is still compressed is decoded at the consumer's pace, and the
            // response then ends normally (see `endResponse`). A request body still being sent (the server answered
            // early) stops now: its file or stream is let go with the connection, not when a suspended task resumes.
            active.keepAlive = false
            if !active.requestWritten { active.bodyWriter?.abandon() }
            if isStream {
                // An HTTP/2 stream closes as its last frame arrives, whatever is left to decode: its connection must
                // keep this handler until the exchange ends (see `closeReportDeferred`).
                closeReportDeferred = true
                context.fireChannelInactive()
                return
            }
        } else if case .active(let active) = state {
            active.bodyWriter?.abandon()
            state = .closed
            storeTimeline(of: active)
            if let violation = streamHost?.connectionFailure() {
                // The server broke the protocol: not a lost connection, and sending the request again would meet the
                // same server.
                active.exchange.connectionFailed(violation, retryable: false)
            } else {
                let retryable = active.isReused && !active.responseStarted && active.exchange.request.isIdempotent
                active.exchange.connectionFailed(
                    .networkConnectionLost("the connection to \(endpoint) closed before the response ended"),
                    retryable: retryable
                )
            }
        } else {
            state = .closed
        }
        reportClosed()
        context.fireChannelInactive()
    }

    /// Tells the connection that the channel closed, and lets go of its callbacks.
    private func reportClosed() {
        closeReportDeferred = false
        onClosed?()
        // Break the connection <-> handler cycle: each callback holds the connection, which holds this handler.
        // One left set (`onUpgraded` on every connection that was never upgraded) kept the closed connection, its
        // channel and pipeline alive for good, some 20 KiB per connection.
        onClosed = nil
        onReusable = nil
        onUpgraded = nil
        streamHost = nil
    }

    // MARK: - Helpers

    /// Sending the request failed. On a reused connection (or stream of one) that closed under it before any
    /// response byte, an idempotent request is sent again on a new connection, as when the close is noticed first.
    private func requestWriteFailed(_ error: TransferError, cause: any Error) {
        guard case .active(let active) = state else { return }
        if isStream, cause is NIOHTTP2Errors.StreamClosed {
            // NIOHTTP2 fails a stream's pending writes (a body held back by flow control) as the stream closes, before
            // the stream's channel hears of the close, which follows in the same turn (`errorCaught`, then
            // `channelInactive`). The close decides: only it tells a stream the server refused (`REFUSED_STREAM`) or
            // a GOAWAY left unprocessed, which goes to another connection whatever its method (RFC 9113 §8.7). Failed
            // here, such an upload would end as a lost connection. (The request timer still runs meanwhile.)
            return
        }
        let closedUnderneath = !(context?.channel.isActive ?? false)
        // A file that could not be read fails on any connection.
        let retryable =
            closedUnderneath && active.isReused && !active.responseStarted && active.exchange.request.isIdempotent
            && !(cause is FileRegionSender.SendFailure)
        fail(error, retryable: retryable)
    }

    private func fail(_ error: TransferError, retryable: Bool) {
        guard case .active(let active) = state else { return }
        state = .closed
        cancelRequestTimer()
        active.bodyWriter?.abandon()
        storeTimeline(of: active)
        active.exchange.connectionFailed(error, retryable: retryable)
        context?.close(promise: nil)
        // A stream already closed under the exchange (cancelled, or its rest undecodable): its close is told now.
        if closeReportDeferred { reportClosed() }
    }

    /// The connection's addresses as text, formatted once per connection (not per exchange). A struct, not a
    /// tuple: an optional tuple of optionals is copied through the runtime's generic value witnesses, which cost
    /// more than the rest of the exchange's bookkeeping together.
    private struct Addresses {
        var local: String?
        var localPort: Int?
        var remote: String?
        var remotePort: Int?
    }

    private var addresses: Addresses?

    /// The writer of `request`'s body, or `nil` for a request without one: it needs no writer, its three callbacks
    /// and the promise of its end, as the end goes out with the head (a failed write fails the channel, and with it
    /// the exchange).
    private func makeBodyWriter(for request: TransportRequest, context: ChannelHandlerContext)
        -> HTTP1RequestBodyWriter?
    {
        if case .none = request.body { return nil }
        let expectsContinue = request.headers.contains {
            HeaderName.equal($0.0, "Expect") && HeaderName.equal($0.1, "100-continue")
        }
        let writer = HTTP1RequestBodyWriter(
            body: request.body, context: context, endpoint: endpoint, expectsContinue: expectsContinue,
            sendsFileRegions: sendsFileRegions)
        writer.onProgress = { [weak self] count, total in self?.didSendBody(count: count, total: total) }
        writer.onEnded = { [weak self] in self?.recordRequestEnd() }
        writer.onFailed = { [weak self] error, cause in self?.requestWriteFailed(error, cause: cause) }
        return writer
    }

    /// The timeline of `exchange` as it starts on this connection: how the connection was made, and the request's
    /// start.
    private func startTimeline(
        of exchange: TransportExchange, isReused: Bool, context: ChannelHandlerContext
    ) -> TransportTimeline {
        var timeline = exchange.timeline.withLockedValue { $0 }
        timeline.isReusedConnection = isReused
        timeline.isProxyConnection = exchange.request.proxy != nil
        timeline.protocolName = protocolName
        if !isReused, let establishment {
            timeline.connectStart = establishment.connectStart
            timeline.connectEnd = establishment.connectEnd
            timeline.secureConnectionStart = establishment.secureConnectionStart
            timeline.secureConnectionEnd = establishment.secureConnectionEnd
        }
        timeline.tlsProtocolVersion = establishment?.tlsProtocolVersion
        recordAddresses(of: context.channel, into: &timeline)
        timeline.requestStart = Date()
        return timeline
    }

    /// Hands the recorded timeline to the exchange, which reports it to its consumer.
    private func storeTimeline(of active: Active) {
        guard let timeline = active.timeline else { return }
        active.exchange.timeline.withLockedValue { $0 = timeline }
    }

    private func recordAddresses(of channel: any Channel, into timeline: inout TransportTimeline) {
        if addresses == nil {
            let local = channel.localAddress
            let remote = channel.remoteAddress
            addresses = Addresses(
                local: local?.ipAddress, localPort: local?.port, remote: remote?.ipAddress, remotePort: remote?.port)
        }
        guard let addresses else { return }
        timeline.localAddress = addresses.local
        timeline.localPort = addresses.localPort
        timeline.remoteAddress = addresses.remote
        timeline.remotePort = addresses.remotePort
    }

    private func recordRequestEnd() {
        guard case .active(let active) = state else { return }
        active.timeline?.requestEnd = Date()
    }

    /// Whether the connection stays open after `head`'s response (NIO's `isKeepAlive` without its allocations).
    private static func persists(_ head: HTTPResponseHead) -> Bool {
        var persistence = ConnectionPersistence.unstated
        for field in head.headers where HeaderName.equal(field.name, "Connection") {
            persistence = persistence.adding(field.value)
        }
        return persistence.persists(versionMajor: head.version.major, versionMinor: head.version.minor)
    }

    /// The bytes of a head on the wire: its start line and fields, each ended by CRLF, then the empty line.
    private static func serializedSize(startLine: Int, headers: HTTPHeaders) -> Int64 {
        var size = startLine + 2 + 2
        for header in headers { size += header.name.utf8.count + 2 + header.value.utf8.count + 2 }
        return Int64(size)
    }

    private func writeHead(_ request: TransportRequest, context: ChannelHandlerContext) {
        // Host goes first (RFC 9112 §3.2 asks for it, and Darwin sends it so): the app's value if it set one.
        var headers = HTTPHeaders()
        headers.reserveCapacity(request.headers.count + 2)  // + Host and the framing field
        headers.add(
            name: "Host",
            value: request.headers.first { HeaderName.equal($0.0, "Host") }?.1 ?? request.endpoint.hostHeader
        )
        for (name, value) in request.headers where !HeaderName.equal(name, "Host") {
            headers.add(name: name, value: value)
        }
        // The framing always comes from the body itself: a Content-Length the app set that disagrees with the
        // body would leave bytes on a reused connection that the server reads as the next request.
        headers.remove(name: "Content-Length")
        headers.remove(name: "Transfer-Encoding")
        // HTTP/2 allows TE only as "trailers" (RFC 9113 §8.2.2), and NIOHTTP2 refuses the request's HEADERS for
        // anything else, with an error that costs the whole connection. It is a hop-by-hop field: dropped, as
        // NIOHTTP2 drops the others (Connection, Keep-Alive, Upgrade).
        if isStream, !TransferCodingRules.fitsHTTP2(te: headers["TE"]) {
            headers.remove(name: "TE")
        }
        if let length = request.body.length {
            if MethodRules.announcesBody(ofLength: length, method: request.method) {
                headers.add(name: "Content-Length", value: String(length))
            }
        } else {
            headers.add(name: "Transfer-Encoding", value: "chunked")
        }
        let head = HTTPRequestHead(
            version: .http1_1,
            method: HTTPMethod(rawValue: request.method),
            uri: request.target,
            headers: headers
        )
        if case .active(let active) = state {
            active.timeline?.requestHeaderBytesSent = Self.serializedSize(
                startLine: request.method.utf8.count + 1 + request.target.utf8.count + " HTTP/1.1".utf8.count,
                headers: headers)
        }
        // Flushed with the body or the end of the request, so a small request leaves in one write.
        context.write(wrapOutboundOut(.head(head)), promise: nil)
    }

    private func didSendBody(count: Int64, total: Int64) {
        guard case .active(let active) = state else { return }
        active.timeline?.requestBodyBytesSent = total
        armRequestTimer()
        active.exchange.consumer.transportDidSendBodyData(bytesSent: count, totalBytesSent: total)
    }

    private func makeHead(_ head: HTTPResponseHead, active: Active)
        -> TransportResponseHead
    {
        TransportResponseHead(
            status: Int(head.status.code),
            reason: head.status.reasonPhrase,
            version: "HTTP/\(head.version.major).\(head.version.minor)",
            headers: head.headers.map { ($0.name, $0.value) },
            connection: ConnectionInfo(isReused: active.isReused, protocolName: protocolName)
        )
    }

    /// Notes activity for the exchange's request timeout. The timer is not rescheduled on every read (that costs a
    /// heap operation per body part): it fires at the earliest possible deadline and re-arms itself for the rest
    /// when there was activity meanwhile.
    ///
    /// Nor is it cancelled when an exchange ends or pauses: a sequential client would otherwise schedule and cancel
    /// one per request. A timer that fires finds whether an unpaused exchange runs; if none does it stops, and the
    /// next exchange arms a new one. One due later than a new exchange's deadline (a shorter timeout) is moved.
    private func armRequestTimer() {
        guard case .active(let active) = state, !active.paused else { return }
        active.lastActivity = now
        let deadline = active.lastActivity + active.exchange.request.idleTimeout
        if requestTimer != nil, requestTimerDeadline <= deadline { return }
        scheduleRequestTimer(at: deadline)
    }

    private func scheduleRequestTimer(at deadline: NIODeadline) {
        cancelRequestTimer()
        guard let context else { return }
        requestTimerDeadline = deadline
        requestTimer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [weak self] in
            self?.requestTimerFired()
        }
    }

    private func cancelRequestTimer() {
        requestTimer?.cancel()
        requestTimer = nil
    }

    private func requestTimerFired() {
        requestTimer = nil
        guard case .active(let active) = state, !active.paused, !active.switchingProtocols else { return }
        let deadline = active.lastActivity + active.exchange.request.idleTimeout
        if deadline > now {
            scheduleRequestTimer(at: deadline)
            return
        }
        // Fired late: the loop reads what may have arrived first (`LateTimerGrace`), once per deadline.
        if LateTimerGrace.firedLate(deadline, now: now), active.lateDeadline != deadline {
            active.lateDeadline = deadline
            scheduleRequestTimer(at: now + LateTimerGrace.extraTurn)
            return
        }
        fail(.timedOut("the request to \(endpoint) timed out"), retryable: false)
    }

    /// Notes that the connection became idle. As with the request timer, a busy connection keeps one timer
    /// instead of scheduling and cancelling one per request: when it fires it checks how long the connection
    /// has really been idle, and re-arms itself for the rest.
    private func armIdleTimer() {
        guard !isStream else { return }  // the HTTP/2 connection keeps its own idle timer
        idleSince = now
        if idleTimer == nil { scheduleIdleTimer(at: idleSince + idleConnectionTimeout) }
    }

    private func scheduleIdleTimer(at deadline: NIODeadline) {
        guard let context else { return }
        idleTimer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [weak self] in
            self?.idleTimerFired()
        }
    }

    private func idleTimerFired() {
        idleTimer = nil
        // Busy again: the next release re-arms the timer.
        guard case .idle = state else { return }
        let deadline = idleSince + idleConnectionTimeout
        if deadline > now {
            scheduleIdleTimer(at: deadline)
        } else {
            context?.close(promise: nil)
        }
    }
}
