import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The output side of a bound stream pair: what it writes, the pair's input stream reads.
///
/// `write` copies as much as the buffer has room for and returns that count, waiting only while the buffer is full
/// (as a CoreFoundation bound pair's does); once the input stream was closed or let go of, writing fails with
/// `EPIPE`. Usable from any thread, blocking, or scheduled in a run loop with a delegate, which gets
/// `.openCompleted`, `.hasSpaceAvailable` and `.errorOccurred`.
final class BoundOutputStream: OutputStream {
    private let buffer: BoundStreamBuffer
    private var status = Stream.Status.notOpen
    private var failure: (any Error)?
    private var poster = StreamEventPoster()
    private weak var streamDelegate: (any StreamDelegate)?
    /// A `.hasSpaceAvailable` is on its way to the delegate: no second one is queued behind it.
    private var spacePending = false

    init(buffer: BoundStreamBuffer) {
        self.buffer = buffer
        super.init(toMemory: ())
    }

    /// Foundation requires it of subclasses; a bound output stream only ever comes from `Stream.getBoundStreams`.
    required init(toMemory: ()) {
        preconditionFailure(
            "a bound output stream is made by Stream.getBoundStreams(withBufferSize:inputStream:outputStream:)")
    }

    deinit {
        // A writer the app let go of writes nothing more: the reader reads what is buffered, then the end.
        buffer.endWriting()
    }

    override func open() {
        let opened: Bool = buffer.locked {
            guard status == .notOpen else { return false }
            status = .open
            return true
        }
        guard opened else { return }
        post(.openCompleted)
        announceSpace()
    }

    override func close() {
        let closed: Bool = buffer.locked {
            defer { status = .closed }
            return status != .closed
        }
        if closed { buffer.endWriting() }
    }

    /// Writes as much of `source` as the buffer takes, waiting while it is full; -1 when the stream is not open or
    /// the input stream is gone.
    override func write(_ source: UnsafePointer<UInt8>, maxLength len: Int) -> Int {
        let outcome: (count: Int, readerGone: Bool) = buffer.locked {
            guard status == .open else { return (-1, false) }
            guard len > 0 else { return (0, false) }
            while buffer.ring.space == 0, !buffer.readerClosed, status == .open {
                buffer.condition.wait()
            }
            guard status == .open else { return (-1, false) }
            guard !buffer.readerClosed else {
                status = .error
                failure = POSIXError(.EPIPE)
                return (-1, true)
            }
            let count = buffer.ring.write(UnsafeRawBufferPointer(start: source, count: len))
            buffer.condition.broadcast()
            return (count, false)
        }
        if outcome.readerGone { post(.errorOccurred) }
        if outcome.count > 0 {
            buffer.input?.bytesBecameAvailable()
            announceSpace()
        }
        return outcome.count
    }

    /// Whether a write would return at once: the buffer has room, or the input stream is gone (the write fails).
    override var hasSpaceAvailable: Bool {
        buffer.locked { status == .open && (buffer.ring.space > 0 || buffer.readerClosed) }
    }

    override var streamStatus: Stream.Status {
        buffer.locked { status }
    }

    override var streamError: (any Error)? {
        buffer.locked { failure }
    }

    override var delegate: (any StreamDelegate)? {
        get { buffer.locked { streamDelegate } }
        set { buffer.locked { streamDelegate = newValue } }
    }

    override func schedule(in aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {
        buffer.locked { poster.schedule(aRunLoop, mode) }
    }

    override func remove(from aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {
        buffer.locked { poster.remove(aRunLoop, mode) }
    }

    override func property(forKey key: Stream.PropertyKey) -> AnyObject? { nil }

    override func setProperty(_ property: AnyObject?, forKey key: Stream.PropertyKey) -> Bool { false }

    /// The input stream read bytes (called without the buffer's lock).
    func spaceBecameAvailable() {
        announceSpace()
    }

    /// The input stream closed or went away (called without the buffer's lock): a writer scheduled in a run loop
    /// hears of it when it next looks for space; its next write fails.
    func readerWentAway() {
        announceSpace()
    }

    /// Tells a delegate that a write would return at once: the buffer has room (or the reader is gone, and the write
    /// fails). One event pending at a time, dropped if a write filled the buffer before it was delivered.
    private func announceSpace() {
        let announces: Bool = buffer.locked {
            guard status == .open, buffer.ring.space > 0 || buffer.readerClosed, !spacePending else { return false }
            spacePending = true
            return true
        }
        guard announces else { return }
        let this = UncheckedStream(stream: self)
        post(.hasSpaceAvailable) {
            this.stream.buffer.locked {
                this.stream.spacePending = false
                return this.stream.status == .open
                    && (this.stream.buffer.ring.space > 0 || this.stream.buffer.readerClosed)
            }
        }
    }

    private func post(_ event: Stream.Event, stillHolds: (@Sendable () -> Bool)? = nil) {
        let (current, delegate): (StreamEventPoster, (any StreamDelegate)?) = buffer.locked { (poster, streamDelegate) }
        current.post(event, of: self, to: delegate, stillHolds: stillHolds)
    }
}
