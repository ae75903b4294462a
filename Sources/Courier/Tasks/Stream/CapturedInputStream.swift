import CourierTransport
import Foundation

/// The input stream of a captured stream task: reading it reads the connection (see ``CapturedStreamPair``).
///
/// Its state is guarded by a condition; a blocking `read` waits on it, and the connection's completions (on its
/// event loop) only ever hold it briefly.
final class CapturedInputStream: InputStream {
    /// The most bytes fetched from the connection at once.
    private static let chunkSize = 64 * 1024

    private let connection: StreamConnection
    private let closer: CapturedConnectionCloser
    private let condition = NSCondition()
    private var status = Stream.Status.notOpen
    private var buffered = Data()
    private var atEnd = false
    private var failure: (any Error)?
    private var fetching = false
    private var poster = StreamEventPoster()
    private weak var streamDelegate: (any StreamDelegate)?

    init(connection: StreamConnection, closer: CapturedConnectionCloser) {
        self.connection = connection
        self.closer = closer
        super.init(data: Data())
    }

    deinit {
        if status != .closed { closer.sideClosed() }
    }

    override func open() {
        let scheduled: Bool = locked {
            guard status == .notOpen else { return false }
            status = .open
            return poster.isScheduled
        }
        post(.openCompleted)
        if scheduled { locked { fetchIfNeeded() } }
    }

    override func close() {
        let wasOpen: Bool = locked {
            guard status != .closed else { return false }
            status = .closed
            buffered.removeAll()
            condition.broadcast()
            return true
        }
        if wasOpen { closer.sideClosed() }
    }

    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int {
        condition.lock()
        defer { condition.unlock() }
        guard status == .open || status == .reading, len > 0 else { return status == .atEnd ? 0 : -1 }
        while buffered.isEmpty, !atEnd, failure == nil, status != .closed {
            fetchIfNeeded()
            condition.wait()
        }
        if !buffered.isEmpty {
            let count = min(len, buffered.count)
            buffered.copyBytes(to: buffer, count: count)
            buffered.removeFirst(count)
            if buffered.isEmpty, poster.isScheduled { fetchIfNeeded() }
            return count
        }
        if failure != nil {
            status = .error
            return -1
        }
        if atEnd {
            status = .atEnd
            return 0
        }
        return -1
    }

    override func getBuffer(
        _ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length len: UnsafeMutablePointer<Int>
    ) -> Bool {
        false
    }

    /// `true` while bytes are buffered, or may come (a read will tell).
    override var hasBytesAvailable: Bool {
        locked {
            guard status == .open || status == .reading else { return false }
            if !buffered.isEmpty { return true }
            fetchIfNeeded()
            return !atEnd && failure == nil
        }
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

    /// Asks the connection for the next chunk, unless one is on its way or none will come. Called locked.
    private func fetchIfNeeded() {
        guard !fetching, !atEnd, failure == nil, status != .closed else { return }
        fetching = true
        let this = UncheckedStream(stream: self)
        connection.read(minLength: 1, maxLength: Self.chunkSize, timeout: nil) { result in
            this.stream.fetched(result)
        }
    }

    /// The connection's answer to a fetch (on its event loop).
    private func fetched(_ result: Result<StreamReadResult, any Error>) {
        let event: Stream.Event? = locked {
            fetching = false
            condition.broadcast()
            switch result {
            case .success(let read):
                if let bytes = read.bytes { buffered.append(contentsOf: bytes.readableBytesView) }
                if read.atEOF { atEnd = true }
                return read.bytes != nil ? .hasBytesAvailable : (atEnd ? .endEncountered : nil)
            case .failure(let error):
                failure = error
                return .errorOccurred
            }
        }
        if let event { post(event) }
    }

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
