import Foundation

/// The input side of a bound stream pair: reads what the pair's output stream wrote, in order.
///
/// `read` waits while the buffer is empty and the output stream is open (as a CoreFoundation bound pair's does), and
/// returns 0 once the output stream was closed and every byte was read. Usable from any thread, blocking, or
/// scheduled in a run loop with a delegate, which gets `.openCompleted`, `.hasBytesAvailable` and `.endEncountered`.
final class BoundInputStream: InputStream {
    private let buffer: BoundStreamBuffer
    private var status = Stream.Status.notOpen
    private var poster = StreamEventPoster()
    private weak var streamDelegate: (any StreamDelegate)?
    /// `.endEncountered` was posted: the reader and the writer's close may both find the end; it is told once.
    private var endPosted = false

    init(buffer: BoundStreamBuffer) {
        self.buffer = buffer
        super.init(data: Data())
    }

    deinit {
        // A reader the app let go of can read nothing more: a writer waiting for space must not wait for ever.
        buffer.locked {
            buffer.readerClosed = true
            buffer.condition.broadcast()
        }
        buffer.output?.readerWentAway()
    }

    override func open() {
        let opened: (Bool, Bool, Bool) = buffer.locked {
            guard status == .notOpen else { return (false, false, false) }
            status = .open
            return (true, !buffer.ring.isEmpty, buffer.writerClosed)
        }
        guard opened.0 else { return }
        post(.openCompleted)
        if opened.1 {
            post(.hasBytesAvailable)
        } else if opened.2 {
            postEnd()
        }
    }

    override func close() {
        let closed: Bool = buffer.locked {
            guard status != .closed else { return false }
            status = .closed
            buffer.readerClosed = true
            buffer.condition.broadcast()
            return true
        }
        if closed { buffer.output?.readerWentAway() }
    }

    /// Reads up to `len` bytes, waiting while there are none and the output stream is open; 0 at the end, -1 when
    /// the stream is not open.
    override func read(_ destination: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int {
        let outcome: (count: Int, freedFullBuffer: Bool, reachedEnd: Bool) = buffer.locked {
            guard status == .open || status == .atEnd else { return (-1, false, false) }
            guard len > 0 else { return (0, false, false) }
            while buffer.ring.isEmpty, !buffer.writerClosed, status == .open {
                buffer.condition.wait()
            }
            guard status == .open || status == .atEnd else { return (-1, false, false) }
            let wasFull = buffer.ring.space == 0
            let count = buffer.ring.read(into: UnsafeMutableRawBufferPointer(start: destination, count: len))
            if count > 0 { buffer.condition.broadcast() }
            let reachedEnd = count == 0 && status == .open
            if count == 0 { status = .atEnd }
            return (count, wasFull && count > 0, reachedEnd)
        }
        if outcome.freedFullBuffer { buffer.output?.spaceBecameAvailable() }
        if outcome.reachedEnd { postEnd() }
        return outcome.count
    }

    override func getBuffer(
        _ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length len: UnsafeMutablePointer<Int>
    ) -> Bool {
        false
    }

    /// Whether a read would return at once: bytes are buffered, or the output stream closed.
    override var hasBytesAvailable: Bool {
        buffer.locked { status == .open && (!buffer.ring.isEmpty || buffer.writerClosed) }
    }

    override var streamStatus: Stream.Status {
        buffer.locked { status }
    }

    override var streamError: (any Error)? { nil }

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

    /// The output stream wrote bytes (called without the buffer's lock).
    func bytesBecameAvailable() {
        if buffer.locked({ status == .open }) { post(.hasBytesAvailable) }
    }

    /// The output stream closed (called without the buffer's lock): a reader scheduled in a run loop learns of the
    /// end from the event once the buffered bytes are read.
    func writerClosed() {
        let state: (open: Bool, empty: Bool) = buffer.locked { (status == .open, buffer.ring.isEmpty) }
        guard state.open else { return }
        if state.empty { postEnd() } else { post(.hasBytesAvailable) }
    }

    private func postEnd() {
        let first: Bool = buffer.locked {
            defer { endPosted = true }
            return !endPosted
        }
        if first { post(.endEncountered) }
    }

    private func post(_ event: Stream.Event) {
        let (current, delegate): (StreamEventPoster, (any StreamDelegate)?) = buffer.locked { (poster, streamDelegate) }
        current.post(event, of: self, to: delegate)
    }
}
