import CourierHTTP
import NIOCore
import NIOHTTP1
import NIOPosix

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Sends a file's request body as `FileRegion`s, which NIO writes with `sendfile(2)`: from the page cache to the
/// socket, without a read into the process, a buffer per chunk or a copy.
///
/// The file is checked and read into the page cache on NIO's thread pool first (``FileRegionPreparation``),
/// ``preparationSize`` bytes at a time and while the channel sends what was prepared before, so the event loop never
/// waits for a disk; the prepared bytes go out in regions of ``regionSize``. While a region is queued, a watch reads
/// the file's size every ``watchInterval``: NIO takes the 0 that `sendfile(2)` returns at the end of a file for a
/// partial write and tries again at once, so a file truncated under a queued region (logrotate's `copytruncate`)
/// would keep the loop busy until the request's timeout, or for ever while its task is suspended. The watch fails
/// the upload instead, as a chunked read of a shortened file does.
///
/// Owned by ``HTTP1RequestBodyWriter``; lives on the connection's event loop.
final class FileRegionSender {
    /// Bytes per region: progress is reported, and the request's timer re-armed, as often as the chunked reads do.
    static let regionSize = Int64(HTTP1RequestBodyWriter.streamChunkSize)
    /// Bytes prepared in one trip to the thread pool: a trip costs two thread wake-ups, worth more than preparing
    /// the bytes of a region (measured: preparing each 512 KiB region on its own made a loopback upload slower than
    /// reading the file in chunks).
    static let preparationSize: Int64 = 4 << 20
    /// How many preparations' bytes may be prepared ahead of the channel: the pages wait in the page cache, not in
    /// the process.
    static let preparedAhead: Int64 = 2
    /// How often the size of a file with a region still queued is checked.
    static let watchInterval = TimeAmount.milliseconds(100)

    /// A region's write failed for the file's sake (`sendfile(2)`'s read side), not the connection's.
    struct SendFailure: Error {
        let errno: Int32
    }

    private let lease: FileRegionLease
    private let length: Int64
    private let context: ChannelHandlerContext
    /// The end of the bytes prepared (checked and cached), ready to queue.
    private var preparedEnd: Int64 = 0
    private var preparing = false
    /// The end of the bytes queued to the channel, and of those whose writes completed.
    private var queuedEnd: Int64 = 0
    private var writtenEnd: Int64 = 0
    private var watch: Scheduled<Void>?
    private var allQueued = false
    private var stopped = false

    /// Body bytes were written: (this write, total).
    var onProgress: ((Int64, Int64) -> Void)?
    /// A region is prepared: the writer may queue it.
    var onPrepared: (() -> Void)?
    /// The file's file system cannot splice it, found before anything was sent: the writer reads it in chunks.
    var onUnsupported: (() -> Void)?
    /// The file failed the upload: the failure to report, and the error behind it.
    var onFailed: ((TransferError, any Error) -> Void)?

    init(descriptor: Int32, length: Int64, context: ChannelHandlerContext) {
        self.lease = FileRegionLease(descriptor: descriptor)
        self.length = length
        self.context = context
    }

    /// Queues the prepared regions while `mayWrite()` holds, and prepares the next one. Returns `true` once: when
    /// the last region was queued, and the writer ends the request (its end goes out after the regions).
    func pump(mayWrite: () -> Bool) -> Bool {
        guard !stopped else { return false }
        var queued = false
        // `queuedEnd` is moved before each write: a write may change the channel's writability and re-enter.
        while !stopped, queuedEnd < preparedEnd, mayWrite() {
            let start = queuedEnd
            let end = min(start + Self.regionSize, preparedEnd)
            queuedEnd = end
            write(from: start, to: end)
            queued = true
        }
        if queuedEnd == length, !allQueued {
            allQueued = true
            return true
        }
        // The next preparation starts before the flush, which sends on the loop (on loopback the receiver's work
        // runs in the sender's call): the thread pool prepares while the socket sends.
        prepareNext()
        if queued { context.flush() }
        return false
    }

    /// The writer needs the sender no more (every region is queued, or the request was abandoned): the file closes
    /// once every queued write and running preparation ended. Queued regions stay watched and report their progress:
    /// their completions hold the sender.
    func release() {
        lease.release()
    }

    /// Stops queueing, preparing and watching: the request was abandoned.
    func stop() {
        stopped = true
        watch?.cancel()
        watch = nil
    }

    /// Prepares the bytes after the prepared ones, one preparation at a time and up to ``preparedAhead``
    /// preparations ahead of the channel.
    private func prepareNext() {
        guard !stopped, !preparing, preparedEnd < length,
            preparedEnd - queuedEnd < Self.preparedAhead * Self.preparationSize
        else { return }
        preparing = true
        let start = preparedEnd
        let end = min(start + Self.preparationSize, length)
        let length = self.length
        let lease = self.lease
        lease.useBegan()
        let descriptor = lease.descriptor
        NIOThreadPool.singleton.runIfActive(eventLoop: context.eventLoop) {
            FileRegionPreparation.prepare(descriptor: descriptor, start: start, end: end, length: length)
        }.assumeIsolated().whenComplete { [weak self] result in
            lease.useEnded()
            guard let self, !self.stopped else { return }
            self.preparing = false
            switch result {
            case .success(.ready):
                self.preparedEnd = end
                self.prepareNext()
                self.onPrepared?()
            case .success(.failed(let error)):
                self.fail(error, cause: error)
            case .success(.unsupported) where self.queuedEnd == 0:
                self.stop()
                self.onUnsupported?()
            case .success(.unsupported):
                let error = TransferError.cannotOpenFile(
                    "the file to upload can no longer be sent from its file system")
                self.fail(error, cause: error)
            case .failure(let error):
                self.fail(.cannotOpenFile("the file to upload could not be read: \(error)"), cause: error)
            }
        }
    }

    private func write(from start: Int64, to end: Int64) {
        let region = FileRegion(fileHandle: lease.handle, readerIndex: Int(start), endIndex: Int(end))
        let lease = self.lease
        lease.useBegan()
        let promise = context.eventLoop.makePromise(of: Void.self)
        // The completion holds the lease: the file stays open while the channel may still send from it.
        promise.futureResult.assumeIsolated().whenComplete { result in
            lease.useEnded()
            self.regionEnded(from: start, to: end, result)
        }
        context.write(NIOAny(HTTPClientRequestPart.body(.fileRegion(region))), promise: promise)
        if watch == nil { scheduleWatch() }
    }

    /// The watch holds the sender until it fires or is cancelled.
    private func scheduleWatch() {
        watch = context.eventLoop.assumeIsolated().scheduleTask(in: Self.watchInterval) { self.checkQueuedRegions() }
    }

    private func regionEnded(from start: Int64, to end: Int64, _ result: Result<Void, any Error>) {
        switch result {
        case .success:
            writtenEnd = end
            if writtenEnd == queuedEnd {
                watch?.cancel()
                watch = nil
            }
            onProgress?(end - start, end)
        case .failure(let error):
            // The channel is closing: nothing more goes out. A failure of the socket's side is reported by the
            // close; one of the file's side (an I/O error reading it) is the file's, and no other connection would
            // fare better.
            guard let code = (error as? IOError)?.errnoCode, Self.isFileError(code) else { return stop() }
            fail(
                .cannotOpenFile("sending the file to upload failed: \(String(cString: strerror(code)))"),
                cause: SendFailure(errno: code))
        }
    }

    /// A region is still queued: the file must still hold it, or the loop would retry a `sendfile(2)` that sends
    /// nothing.
    private func checkQueuedRegions() {
        watch = nil
        guard !stopped, writtenEnd < queuedEnd else { return }
        // A closed channel fails its queued writes: nothing is left to watch.
        guard context.channel.isActive else { return stop() }
        let size = FileRegionPreparation.size(of: lease.descriptor)
        guard let size, size >= queuedEnd else {
            let error = RequestBodyLengthMismatch.endedEarly(after: size ?? 0, of: length)
            return fail(error, cause: error)
        }
        scheduleWatch()
    }

    /// Errors of `sendfile(2)` that come from reading the file rather than from the socket. (NIO does not say which
    /// side failed; a socket fails with none of these.)
    private static func isFileError(_ code: Int32) -> Bool {
        [EIO, EOVERFLOW, ESPIPE, ENXIO, ESTALE].contains(code)
    }

    private func fail(_ error: TransferError, cause: any Error) {
        guard !stopped else { return }
        stop()
        onFailed?(error, cause)
    }
}
