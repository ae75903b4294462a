import CourierHTTP
import NIOCore
import NIOHTTP1

/// Writes one request's body after its head: from memory, or pulled from a ``TransportBodySource``, with
/// backpressure either way (the next chunk is written, or read, only while the channel is writable: on an HTTP/2
/// stream, while the peer's flow-control windows take it), after waiting for `100 Continue` when the request asked
/// for it. A file's body goes out with `sendfile(2)` where the connection allows it (``FileRegionSender``). Lives on
/// the connection's event loop, owned by ``HTTP1ClientHandler``.
final class HTTP1RequestBodyWriter {
    /// Bytes per write of an in-memory body, so upload progress is reported as the body goes out.
    static let chunkSize = 64 * 1024
    /// Bytes per read of a streamed body (a file): few hops off the loop, one chunk in memory at a time.
    static let streamChunkSize = 512 * 1024
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
    /// Whether a file's bytes may go to the channel as `FileRegion`s: nothing between the codec and the socket needs
    /// the bytes themselves (no TLS, no proxy, not an HTTP/2 stream).
    private let sendsFileRegions: Bool
    /// The file being sent with `sendfile(2)`, once its reader offered it.
    private var regionSender: FileRegionSender?
    private var phase: Phase
    private var continueTimer: Scheduled<Void>?
    private var reader: (any TransportBodyReader)?
    private var readerRequested = false
    private var reading = false
    private var readAhead: ByteBuffer?
    private var sourceEnded = false
    private var totalRead: Int64 = 0
    private var totalSent: Int64 = 0
    /// What is left to write of a body in memory, once its writing started.
    private var unwritten: ByteBuffer?
    /// The exchange is paused (its task suspended): no further chunk of the body is read or written until it
    /// continues, as `suspend()` stops a whole transfer on Darwin ("produces no network traffic").
    private var paused = false

    /// Body bytes were written: (this write, total).
    var onProgress: ((Int64, Int64) -> Void)?
    /// The whole request is written.
    var onEnded: (() -> Void)?
    /// Writing the body failed: the failure to report, and the error behind it (the same when it was already a
    /// `TransferError`), which tells an HTTP/2 stream's close from other failures.
    var onFailed: ((TransferError, any Error) -> Void)?

    init(
        body: TransportRequestBody, context: ChannelHandlerContext, endpoint: Endpoint, expectsContinue: Bool,
        sendsFileRegions: Bool = false
    ) {
        self.body = body
        self.context = context
        self.endpoint = endpoint
        self.sendsFileRegions = sendsFileRegions
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

    /// Stops (`true`) or continues (`false`) sending a streamed body: the handler passes the exchange's pause on.
    func setPaused(_ paused: Bool) {
        guard self.paused != paused else { return }
        self.paused = paused
        if !paused { pump() }
    }

    /// Stops writing and releases the reader.
    func abandon() {
        // Once: a connection that closes under a pending response abandons the writer, and the response's end does
        // again.
        if case .abandoned = phase { return }
        continueTimer?.cancel()
        continueTimer = nil
        phase = .abandoned
        unwritten = nil
        regionSender?.stop()
        // A read may be running on the thread pool: files and streams are not safe to close under it, so the
        // read's completion closes the reader then (asked to end its read now, where it can).
        if reading {
            reader?.interruptRead()
        } else {
            releaseReader()
        }
    }

    private func writeBody() {
        switch body {
        case .none:
            end()
        case .bytes(let buffer):
            // Chunk by chunk as the channel drains, not handed over whole: a suspended task then stops sending (over
            // HTTP/2 the whole body would otherwise wait in the stream's flow-control buffer and go out as the
            // server's windows open, suspended or not).
            unwritten = buffer
            pump()
        case .stream(let length, let source):
            guard !readerRequested else { return }
            readerRequested = true
            // A head that announces no body is a whole request: it waits until the source proved empty (see
            // `holdsBack`), else a server would act on an empty request the client then fails.
            if length != 0 { context.flush() }
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
                    self.regionSender = self.makeRegionSender(for: reader)
                    self.pump()
                case .failure(let error):
                    self.fail(error)
                }
            }
        }
    }

    /// Writes the chunk read ahead while the channel is writable, and keeps one read in flight, so reading the
    /// source (a file, off the event loop) overlaps with the socket draining what was written.
    private func pump() {
        guard case .writing = phase, !paused else { return }
        if unwritten != nil {
            writeUnwritten()
            return
        }
        if let regionSender {
            let mayWrite = { [unowned self] in
                guard case .writing = self.phase, !self.paused else { return false }
                return self.context.channel.isWritable
            }
            if regionSender.pump(mayWrite: mayWrite) {
                releaseReader()
                end()
            }
            return
        }
        guard let reader else { return }
        if let buffer = readAhead, context.channel.isWritable, !holdsBack(buffer) {
            readAhead = nil
            write(buffer)
            context.flush()
        }
        if sourceEnded {
            if readAhead == nil { endStream() }
            return
        }
        // A chunk held back (it would complete the declared length) waits for one more read, which must find the
        // end of the source.
        guard !reading, readAhead.map({ holdsBack($0) }) ?? true else { return }
        reading = true
        let chunk: EventLoopFuture<ByteBuffer?>
        if let direct = reader as? any EventLoopBodyReader {
            chunk = direct.read(maxLength: Self.streamChunkSize, on: context.eventLoop)
        } else {
            let promise = context.eventLoop.makePromise(of: ByteBuffer?.self)
            promise.completeWithTask { try await reader.read(maxLength: Self.streamChunkSize) }
            chunk = promise.futureResult
        }
        chunk.assumeIsolated().whenComplete { [weak self] result in
            guard let self else {
                // The writer is gone (its connection closed while the read ran): the reader is closed here.
                reader.close()
                return
            }
            self.reading = false
            guard case .writing = self.phase else {
                self.releaseReader()
                return
            }
            switch result {
            case .success(.some(let buffer)):
                self.totalRead += Int64(buffer.readableBytes)
                if case .stream(.some(let length), _) = self.body, self.totalRead > length {
                    // The body stream broke its request, as a failed or overlong read does: the code the engine
                    // gives those (`InputStreamBodySource`), not `badURL`, whose text says "unsupported URL".
                    self.fail(RequestBodyLengthMismatch.tooLong(length))
                    return
                }
                if buffer.readableBytes > 0 { self.readAhead = buffer }
            case .success(.none):
                self.sourceEnded = true
            case .failure(let error):
                self.fail(error)
                return
            }
            self.pump()
        }
    }

    /// The sender of `reader`'s file with `sendfile(2)`, when its bytes may go out that way: a file with a declared
    /// length on a connection that takes `FileRegion`s. `nil` reads the file in chunks instead, as when the file
    /// cannot be opened again (the reads then report the failure).
    private func makeRegionSender(for reader: any TransportBodyReader) -> FileRegionSender? {
        guard sendsFileRegions, FileRegionPreparation.isAvailable, case .stream(.some(let length), _) = body,
            length > 0, let file = reader as? any FileRegionBodyReader, let descriptor = file.makeRegionDescriptor()
        else { return nil }
        let sender = FileRegionSender(descriptor: descriptor, length: length, context: context)
        sender.onPrepared = { [weak self] in self?.pump() }
        sender.onProgress = { [weak self] count, total in self?.onProgress?(count, total) }
        sender.onFailed = { [weak self] error, cause in self?.fail(error, cause: cause) }
        sender.onUnsupported = { [weak self] in
            // Nothing was read or sent: the reader starts from the file's beginning.
            guard let self else { return }
            self.regionSender?.release()
            self.regionSender = nil
            self.pump()
        }
        return sender
    }

    /// Writes the rest of a body in memory while the channel is writable, then the request's end; the channel's next
    /// writability change (``writabilityChanged()``) goes on. `unwritten` is updated before each write, since a write
    /// or flush may change the channel's writability and so re-enter ``pump()``.
    private func writeUnwritten() {
        while case .writing = phase, !paused, context.channel.isWritable, var buffer = unwritten,
            buffer.readableBytes > 0
        {
            let slice = buffer.readSlice(length: min(Self.chunkSize, buffer.readableBytes)) ?? ByteBuffer()
            unwritten = buffer
            write(slice)
        }
        guard case .writing = phase, let buffer = unwritten else { return }
        if buffer.readableBytes == 0 {
            unwritten = nil
            end()
        } else {
            // What was written (the head at least) must drain for the channel to become writable again.
            context.flush()
        }
    }

    /// Whether `buffer` completes the body's declared `Content-Length` while the source has not yet said it ended.
    /// Those bytes make the request whole on the wire, so they wait until the source proves it has no more: a source
    /// longer than its length fails the request before the server can act on a complete but truncated one (and a
    /// keep-alive server would read the rest as the next request).
    private func holdsBack(_ buffer: ByteBuffer) -> Bool {
        guard !sourceEnded, case .stream(.some(let length), _) = body else { return false }
        return totalSent + Int64(buffer.readableBytes) == length
    }

    /// The source is exhausted and everything read was written: check the length and end the request.
    private func endStream() {
        if case .stream(.some(let length), _) = body, totalSent != length {
            fail(RequestBodyLengthMismatch.endedEarly(after: totalSent, of: length))
            return
        }
        releaseReader()
        end()
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

    private func fail(_ error: any Error, cause: (any Error)? = nil) {
        if case .abandoned = phase { return }
        abandon()
        let transfer =
            error as? TransferError ?? TransportErrorMapping.exchangeError(error, endpoint: endpoint)
        onFailed?(transfer, cause ?? error)
    }

    private func releaseReader() {
        reader?.close()
        reader = nil
        regionSender?.release()
        regionSender = nil
    }
}
