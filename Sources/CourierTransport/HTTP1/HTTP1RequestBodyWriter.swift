import CourierHTTP
import NIOCore
import NIOHTTP1

/// Writes one request's body after its head: from memory or pulled from a ``TransportBodySource`` with
/// backpressure (the next chunk is read only while the channel is writable), after waiting for `100 Continue`
/// when the request asked for it. Lives on the connection's event loop, owned by ``HTTP1ClientHandler``.
final class HTTP1RequestBodyWriter {
    /// Bytes per write, so upload progress is reported as the body goes out.
    static let chunkSize = 64 * 1024
    /// How long to wait for `100 Continue` before sending the body anyway (as curl does).
    static let continueTimeout = TimeAmount.seconds(1)

    private enum Phase {
        case waitingForContinue
        case writing
        case ended
        case abandoned
    }

    private let body: TransportRequestBody
    private let context: ChannelHandlerContext
    private let endpoint: Endpoint
    private var phase: Phase
    private var continueTimer: Scheduled<Void>?
    private var reader: (any TransportBodyReader)?
    private var readerRequested = false
    private var reading = false
    private var totalSent: Int64 = 0
    private var pendingBuffer: ByteBuffer?

    /// Body bytes were written: (this write, total).
    var onProgress: ((Int64, Int64) -> Void)?
    /// The whole request is written.
    var onEnded: (() -> Void)?
    /// Writing the body failed.
    var onFailed: ((TransferError) -> Void)?

    init(body: TransportRequestBody, context: ChannelHandlerContext, endpoint: Endpoint, expectsContinue: Bool) {
        self.body = body
        self.context = context
        self.endpoint = endpoint
        let hasBody = (body.length ?? 1) > 0
        self.phase = expectsContinue && hasBody ? .waitingForContinue : .writing
    }

    /// The head was written: start the body, or wait for `100 Continue`.
    func begin() {
        switch phase {
        case .waitingForContinue:
            context.flush()
            continueTimer = context.eventLoop.assumeIsolated().scheduleTask(in: Self.continueTimeout) { [weak self] in
                self?.continueReceived()
            }
        case .writing:
            writeBody()
        case .ended, .abandoned:
            break
        }
    }

    /// `100 Continue` arrived (or the wait timed out).
    func continueReceived() {
        guard case .waitingForContinue = phase else { return }
        continueTimer?.cancel()
        continueTimer = nil
        phase = .writing
        writeBody()
    }

    /// The final response arrived while the body was not (fully) sent: stop sending. The connection cannot be
    /// reused afterwards, since the server did not read a complete request.
    func finalResponseArrived() {
        if case .waitingForContinue = phase { abandon() }
    }

    /// Whether the request was written completely.
    var isEnded: Bool {
        if case .ended = phase { return true }
        return false
    }

    /// The channel became writable again.
    func writabilityChanged() {
        pump()
    }

    /// Stops writing and releases the reader.
    func abandon() {
        continueTimer?.cancel()
        continueTimer = nil
        phase = .abandoned
        releaseReader()
    }

    private func writeBody() {
        switch body {
        case .none:
            end()
        case .bytes(var buffer):
            while buffer.readableBytes > 0,
                let slice = buffer.readSlice(length: min(Self.chunkSize, buffer.readableBytes))
            {
                write(slice)
            }
            end()
        case .stream(_, let source):
            guard !readerRequested else { return }
            readerRequested = true
            context.flush()
            let promise = context.eventLoop.makePromise(of: (any TransportBodyReader).self)
            promise.completeWithTask { try await source.makeReader() }
            promise.futureResult.assumeIsolated().whenComplete { [weak self] result in
                guard let self else {
                    if case .success(let reader) = result { reader.close() }
                    return
                }
                switch result {
                case .success(let reader):
                    guard case .writing = self.phase else {
                        reader.close()
                        return
                    }
                    self.reader = reader
                    self.pump()
                case .failure(let error):
                    self.fail(error)
                }
            }
        }
    }

    /// Reads and writes the next chunk while the channel is writable.
    private func pump() {
        guard case .writing = phase, let reader, !reading, context.channel.isWritable else { return }
        reading = true
        let promise = context.eventLoop.makePromise(of: ByteBuffer?.self)
        promise.completeWithTask { try await reader.read(maxLength: Self.chunkSize) }
        promise.futureResult.assumeIsolated().whenComplete { [weak self] result in
            guard let self else { return }
            self.reading = false
            guard case .writing = self.phase else { return }
            switch result {
            case .success(.some(let buffer)):
                if case .stream(.some(let length), _) = self.body, self.totalSent + Int64(buffer.readableBytes) > length
                {
                    self.fail(TransferError.badURL("the request body is longer than its Content-Length (\(length))"))
                    return
                }
                if buffer.readableBytes > 0 { self.write(buffer) }
                self.context.flush()
                self.pump()
            case .success(.none):
                if case .stream(.some(let length), _) = self.body, self.totalSent != length {
                    self.fail(
                        TransferError.badURL("the request body ended after \(self.totalSent) of \(length) bytes")
                    )
                    return
                }
                self.releaseReader()
                self.end()
            case .failure(let error):
                self.fail(error)
            }
        }
    }

    private func write(_ buffer: ByteBuffer) {
        let count = Int64(buffer.readableBytes)
        totalSent += count
        let total = totalSent
        let promise = context.eventLoop.makePromise(of: Void.self)
        promise.futureResult.assumeIsolated().whenSuccess { [weak self] in
            self?.onProgress?(count, total)
        }
        context.write(NIOAny(HTTPClientRequestPart.body(.byteBuffer(buffer))), promise: promise)
    }

    private func end() {
        let promise = context.eventLoop.makePromise(of: Void.self)
        promise.futureResult.assumeIsolated().whenComplete { [weak self] result in
            guard let self else { return }
            switch result {
            case .success:
                if case .writing = self.phase { self.phase = .ended }
                self.onEnded?()
            case .failure(let error):
                self.fail(error)
            }
        }
        context.writeAndFlush(NIOAny(HTTPClientRequestPart.end(nil)), promise: promise)
    }

    private func fail(_ error: any Error) {
        if case .abandoned = phase { return }
        abandon()
        let transfer =
            error as? TransferError ?? TransportErrorMapping.exchangeError(error, endpoint: endpoint, bodyStarted: true)
        onFailed?(transfer)
    }

    private func releaseReader() {
        reader?.close()
        reader = nil
    }
}
