import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL

@testable import CourierMockServer

/// A response on one HTTP/2 stream, as the frame-level test client saw it.
struct H2TestResponse: Sendable {
    /// The fields of each informational (1xx) HEADERS frame, in order.
    var informational: [[(name: String, value: String)]] = []
    /// The fields of the final HEADERS frame, pseudo-header fields included; empty if none came.
    var fields: [(name: String, value: String)] = []
    /// The body.
    var body: [UInt8] = []
    /// The payload size of each DATA frame, in order (the last may be an empty one carrying END_STREAM).
    var dataFrameSizes: [Int] = []
    /// The error code of the RST_STREAM that ended the stream, if one did.
    var resetCode: HTTP2ErrorCode?
    /// Whether the stream ended with END_STREAM.
    var ended = false

    /// The `:status` of the final head.
    var status: Int? {
        field(":status").flatMap { Int($0) }
    }

    /// The value of the final head's first field called `name` (HTTP/2 names are lowercase).
    func field(_ name: String) -> String? {
        fields.first { $0.name == name }?.value
    }

    var text: String {
        String(decoding: body, as: UTF8.self)
    }
}

/// A minimal HTTP/2 client over one real loopback TLS connection, working at the frame level: NIOHTTP2Handler
/// runs without a stream multiplexer, so the test sees every frame the server sends (SETTINGS, HEADERS, DATA,
/// RST_STREAM, GOAWAY, PING) and writes frames itself. Header and content-length validation are off, so malformed
/// responses arrive as frames instead of errors. It sends no WINDOW_UPDATE: keep response bodies under 64 KiB.
final class H2TestConnection {
    private var iterator: NIOAsyncChannelInboundStream<HTTP2Frame>.AsyncIterator
    private let outbound: NIOAsyncChannelOutboundWriter<HTTP2Frame>
    private var nextStreamID = 1
    private var isAtEnd = false
    /// Every frame received so far, in order.
    private(set) var frames: [HTTP2Frame] = []
    /// The ALPN protocol negotiated by TLS, if any.
    let negotiatedProtocol: String?

    private init(
        iterator: NIOAsyncChannelInboundStream<HTTP2Frame>.AsyncIterator,
        outbound: NIOAsyncChannelOutboundWriter<HTTP2Frame>,
        negotiatedProtocol: String?
    ) {
        self.iterator = iterator
        self.outbound = outbound
        self.negotiatedProtocol = negotiatedProtocol
    }

    /// Connects to `server` (at 127.0.0.1, or at `unixSocketPath`) over TLS offering ALPN `h2` only, runs `body`
    /// with the connection and closes it.
    static func with<Result: Sendable>(
        _ server: MockServer,
        unixSocketPath: String? = nil,
        _ body: (H2TestConnection) async throws -> Result
    ) async throws -> Result {
        let tls = try clientTLSContext(trusting: server, applicationProtocols: ["h2"])
        let alpn = NIOLockedValueBox<String?>(nil)
        let handshake = NIOLockedValueBox<EventLoopPromise<Void>?>(nil)
        // A Unix socket has no IP address to verify the certificate against: use its DNS name.
        let serverHostname = unixSocketPath == nil ? nil : "localhost"
        @Sendable func initialize(_ channel: any Channel) -> EventLoopFuture<NIOAsyncChannel<HTTP2Frame, HTTP2Frame>> {
            channel.eventLoop.makeCompletedFuture {
                let promise = channel.eventLoop.makePromise(of: Void.self)
                handshake.withLockedValue { $0 = promise }
                var configuration = NIOHTTP2Handler.ConnectionConfiguration()
                configuration.headerBlockValidation = .disabled
                configuration.contentLengthValidation = .disabled
                let pipeline = channel.pipeline.syncOperations
                try pipeline.addHandler(NIOSSLClientHandler(context: tls, serverHostname: serverHostname))
                try pipeline.addHandler(HandshakeObserver(promise: promise, negotiatedProtocol: alpn))
                try pipeline.addHandler(NIOHTTP2Handler(mode: .client, connectionConfiguration: configuration))
                return try NIOAsyncChannel<HTTP2Frame, HTTP2Frame>(wrappingChannelSynchronously: channel)
            }
        }
        // 30 s, not 5: a loopback connect waits only for the event loops, which a loaded machine running the whole
        // suite has held for longer than 5 s.
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connectTimeout(.seconds(30))
        let channel =
            if let unixSocketPath {
                try await bootstrap.connect(unixDomainSocketPath: unixSocketPath, channelInitializer: initialize)
            } else {
                try await bootstrap.connect(host: "127.0.0.1", port: server.port, channelInitializer: initialize)
            }
        if let promise = handshake.withLockedValue({ $0 }) {
            do {
                try await promise.futureResult.get()
            } catch {
                try? await channel.channel.close()
                throw error
            }
        }
        return try await channel.executeThenClose { inbound, outbound in
            let connection = H2TestConnection(
                iterator: inbound.makeAsyncIterator(),
                outbound: outbound,
                negotiatedProtocol: alpn.withLockedValue { $0 }
            )
            return try await body(connection)
        }
    }

    // MARK: Sending

    /// Opens the next stream with a request and returns its id. With a `body`, a `content-length` field and one DATA
    /// frame follow; `endStream` false leaves the request open.
    @discardableResult
    func sendRequest(
        _ method: String = "GET",
        _ path: String,
        fields extraFields: [(String, String)] = [],
        body: [UInt8]? = nil,
        endStream: Bool = true
    ) async throws -> Int {
        let streamID = nextStreamID
        nextStreamID += 2
        var fields = [(":method", method), (":scheme", "https"), (":authority", "localhost"), (":path", path)]
        fields += extraFields
        if let body {
            fields.append(("content-length", String(body.count)))
        }
        let headers = HTTP2Frame.FramePayload.Headers(headers: .init(fields), endStream: endStream && body == nil)
        try await send(HTTP2Frame(streamID: HTTP2StreamID(streamID), payload: .headers(headers)))
        if let body {
            let data = HTTP2Frame.FramePayload.Data(data: .byteBuffer(ByteBuffer(bytes: body)), endStream: endStream)
            try await send(HTTP2Frame(streamID: HTTP2StreamID(streamID), payload: .data(data)))
        }
        return streamID
    }

    /// Sends `frame`.
    func send(_ frame: HTTP2Frame) async throws {
        try await outbound.write(frame)
    }

    /// Opens the flow-control windows of stream `streamID` and of the connection by `increment` bytes.
    func openWindows(of streamID: Int, by increment: Int) async throws {
        for id in [HTTP2StreamID(streamID), .rootStream] {
            try await send(HTTP2Frame(streamID: id, payload: .windowUpdate(windowSizeIncrement: increment)))
        }
    }

    /// The body bytes received on stream `streamID` so far.
    func bodyBytesReceived(on streamID: Int) -> Int {
        frames.reduce(0) { total, frame in
            guard Int(frame.streamID) == streamID, case .data(let data) = frame.payload else { return total }
            return total + data.data.readableBytes
        }
    }

    // MARK: Receiving

    /// Reads until stream `streamID` ends (END_STREAM or RST_STREAM) and returns what came on it. Frames of other
    /// streams stay available.
    func response(on streamID: Int) async throws -> H2TestResponse {
        var response = H2TestResponse()
        var index = 0
        while true {
            while index < frames.count {
                let frame = frames[index]
                index += 1
                guard Int(frame.streamID) == streamID else { continue }
                if Self.apply(frame.payload, to: &response) {
                    return response
                }
            }
            guard try await receive() else { throw TestClientError.truncatedBody(received: response.body.count) }
        }
    }

    /// Adds `payload` to `response`; returns whether the stream has ended.
    private static func apply(_ payload: HTTP2Frame.FramePayload, to response: inout H2TestResponse) -> Bool {
        switch payload {
        case .headers(let headers):
            let fields = headers.headers.map { (name: $0.name, value: $0.value) }
            let status = fields.first { $0.name == ":status" }.flatMap { Int($0.value) }
            if let status, (100..<200).contains(status) {
                response.informational.append(fields)
            } else if response.fields.isEmpty {
                response.fields = fields
            }
            response.ended = headers.endStream
            return headers.endStream
        case .data(let data):
            if case .byteBuffer(let buffer) = data.data {
                response.body += buffer.readableBytesView
                response.dataFrameSizes.append(buffer.readableBytes)
            }
            response.ended = data.endStream
            return data.endStream
        case .rstStream(let code):
            response.resetCode = code
            return true
        default:
            return false
        }
    }

    /// Returns the first frame, received before or after this call, that matches `predicate`.
    func frame(where predicate: (HTTP2Frame) -> Bool) async throws -> HTTP2Frame {
        var index = 0
        while true {
            while index < frames.count {
                if predicate(frames[index]) { return frames[index] }
                index += 1
            }
            guard try await receive() else { throw TestClientError.malformed("connection ended first") }
        }
    }

    /// Reads until the server closes the connection; returns whether it did (rather than the read failing).
    func isClosedByServer() async throws -> Bool {
        while try await receive() {}
        return isAtEnd
    }

    /// Reads one more frame; `false` at the end of the connection.
    private func receive() async throws -> Bool {
        guard !isAtEnd else { return false }
        do {
            guard let frame = try await iterator.next() else {
                isAtEnd = true
                return false
            }
            frames.append(frame)
            return true
        } catch let error as ChannelError where error == .eof || error == .inputClosed {
            isAtEnd = true
            return false
        } catch is NIOSSLError {
            isAtEnd = true
            return false
        }
    }
}
