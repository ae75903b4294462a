import CourierTransport
import Foundation
import NIOCore

/// The output stream of a captured stream task: writing it writes the connection, closing it closes the
/// connection's write side (see ``CapturedStreamPair``).
final class CapturedOutputStream: OutputStream {
    private let connection: StreamConnection
    private let closer: CapturedConnectionCloser
    private let condition = NSCondition()
    private var status = Stream.Status.notOpen
    private var failure: (any Error)?
    /// The outcomes of the writes in progress, by sequence number (writes may come from several threads).
    private var outcomes: [Int: Result<Void, any Error>] = [:]
    private var writesStarted = 0
    private var poster = StreamEventPoster()
    private weak var streamDelegate: (any StreamDelegate)?

    init(connection: StreamConnection, closer: CapturedConnectionCloser) {
        self.connection = connection
        self.closer = closer
        super.init(toMemory: ())
    }

    /// Foundation requires it of subclasses; a captured stream only ever comes from `captureStreams()`.
    required init(toMemory: ()) {
        preconditionFailure("a captured output stream is made by URLSessionStreamTask.captureStreams()")
    }

    deinit {
        if status != .closed { closer.sideClosed() }
    }

    override func open() {
        let opened: Bool = locked {
            guard status == .notOpen else { return false }
            status = .open
            return true
        }
        guard opened else { return }
        post(.openCompleted)
        post(.hasSpaceAvailable)
    }

    override func close() {
        let wasOpen: Bool = locked {
            guard status != .closed else { return false }
            status = .closed
            return true
        }
        guard wasOpen else { return }
        connection.closeWrite { _ in }
        closer.sideClosed()
    }

    /// Writes all of `buffer` and returns once it went to the network (or -1 on failure).
    override func write(_ buffer: UnsafePointer<UInt8>, maxLength len: Int) -> Int {
        let writable = locked { status == .open || status == .writing }
        guard writable else { return -1 }
        guard len > 0 else { return 0 }
        let bytes = ByteBuffer(bytes: UnsafeBufferPointer(start: buffer, count: len))
        let this = UncheckedStream(stream: self)
        let sequence: Int = locked {
            writesStarted += 1
            return writesStarted
        }
        connection.write(bytes, timeout: nil) { result in
            this.stream.locked {
                this.stream.outcomes[sequence] = result
                this.stream.condition.broadcast()
            }
        }
        let result: Result<Void, any Error> = locked {
            while outcomes[sequence] == nil { condition.wait() }
            return outcomes.removeValue(forKey: sequence) ?? .success(())
        }
        switch result {
        case .success:
            post(.hasSpaceAvailable)
            return len
        case .failure(let error):
            locked {
                failure = error
                status = .error
            }
            post(.errorOccurred)
            return -1
        }
    }

    override var hasSpaceAvailable: Bool {
        locked { status == .open || status == .writing }
    }

    override var streamStatus: Stream.Status {
        locked { status }
    }

    override var streamError: (any Error)? {
        locked { failure }
    }

    override var delegate: (any StreamDelegate)? {
        get { locked { streamDelegate } }
        set { locked { streamDelegate = newValue } }
    }

    override func schedule(in aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {
        locked { poster.schedule(aRunLoop, mode) }
    }

    override func remove(from aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {
        locked { poster.remove(aRunLoop, mode) }
    }

    override func property(forKey key: Stream.PropertyKey) -> AnyObject? { nil }

    override func setProperty(_ property: AnyObject?, forKey key: Stream.PropertyKey) -> Bool { false }

    private func post(_ event: Stream.Event) {
        let current: StreamEventPoster = locked { poster }
        let delegate: (any StreamDelegate)? = locked { streamDelegate }
        current.post(event, of: self, to: delegate)
    }

    private func locked<T>(_ body: () -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        return body()
    }
}
