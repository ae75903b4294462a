import Foundation

/// The input side of a bound stream pair: reads what the pair's output stream wrote, in order.
///
/// `read` waits while the buffer is empty and the output stream is open (as a CoreFoundation bound pair's does), and
/// returns 0 once the output stream was closed and every byte was read (the stream is then `.atEnd`). Usable from any thread, blocking, or
/// scheduled in a run loop with a delegate, which gets `.openCompleted`, `.hasBytesAvailable` and `.endEncountered`.
final class BoundInputStream: InputStream {
    private let buffer: BoundStreamBuffer
    private var status = Stream.Status.notOpen
    private var poster = StreamEventPoster()
    private weak var streamDelegate: (any StreamDelegate)?
    /// A `.hasBytesAvailable` is on its way to the delegate: no second one is queued behind it.
    private var bytesPending = false

    init(buffer: BoundStreamBuffer) {
        self.buffer = buffer
        super.init(data: Data())
    }

    deinit {
        // A reader the app let go of can read nothing more: a writer waiting for space must not wait for ever.
        buffer.endReading()
    }

    override func open() {
        let opened: Bool = buffer.locked {
            guard status == .notOpen else { return false }
            status = .open
            return true
        }
        guard opened else { return }
        post(.openCompleted)
        announce()
    }

    override func close() {
        let closed: Bool = buffer.locked {
            defer { status = .closed }
            return status != .closed
        }
        if closed { buffer.endReading() }
    }

    /// Reads up to `len` bytes, waiting while there are none and the output stream is open; 0 at the end, -1 when
    /// the stream is not open (or was closed while the read waited).
    override func read(_ destination: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int {
        let outcome: (count: Int, freedSpace: Bool) = buffer.locked {
            guard status == .open || status == .atEnd else { return (-1, false) }
            guard len > 0 else { return (0, false) }
            while buffer.ring.isEmpty, !buffer.writerClosed, status == .open {
                buffer.condition.wait()
            }
            guard status == .open || status == .atEnd else { return (-1, false) }
            let count = buffer.ring.read(into: UnsafeMutableRawBufferPointer(start: destination, count: len))
            if count > 0 { buffer.condition.broadcast() }
            return (count, count > 0)
        }
        if outcome.freedSpace { buffer.output?.spaceBecameAvailable() }
        if outcome.count >= 0 { announce() }
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
        announce()
    }

    /// The output stream closed or went away (called without the buffer's lock).
    func writerClosed() {
        announce()
    }

    /// Tells a delegate what a read would find now: `.hasBytesAvailable` while bytes are buffered (one event
    /// pending at a time, dropped if a read took the bytes before it was delivered), `.endEncountered` once, when
    /// the output stream closed and every byte was read; the stream is then at its end.
    private func announce() {
        enum Announcement { case none, bytes, end }
        let announcement: Announcement = buffer.locked {
            guard status == .open else { return .none }
            if !buffer.ring.isEmpty {
                guard !bytesPending else { return .none }
                bytesPending = true
                return .bytes
            }
            guard buffer.writerClosed else { return .none }
            status = .atEnd
            return .end
        }
        switch announcement {
        case .none:
            break
        case .bytes:
            let this = UncheckedStream(stream: self)
            post(.hasBytesAvailable) {
                this.stream.buffer.locked {
                    this.stream.bytesPending = false
                    return this.stream.status == .open && !this.stream.buffer.ring.isEmpty
                }
            }
        case .end:
            post(.endEncountered)
        }
    }

    private func post(_ event: Stream.Event, stillHolds: (@Sendable () -> Bool)? = nil) {
        let (current, delegate): (StreamEventPoster, (any StreamDelegate)?) = buffer.locked { (poster, streamDelegate) }
        current.post(event, of: self, to: delegate, stillHolds: stillHolds)
    }
}
