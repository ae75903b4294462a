import CourierHTTP
import Foundation
import NIOConcurrencyHelpers

/// Streams a download task's body into its ``DownloadFile`` with backpressure, and reports each write that
/// reached the file (the engine turns it into `didWriteData`).
final class DownloadSink: Sendable {
    /// Unwritten bytes above which the transfer pauses, and below which it continues.
    static let highWatermark = 1 << 20
    static let lowWatermark = 256 << 10

    private struct State {
        var file: DownloadFile?
        var outstanding = 0
        var written: Int64 = 0
        var paused = false
        var failed = false
        /// The download ended (finished, kept for resume data, or discarded): no file may be opened any more. A
        /// head that arrives while a cancel runs would otherwise create a file nothing deletes.
        var ended = false
    }

    private let directory: URL
    private let state = NIOLockedValueBox(State())
    /// The sink's wish changed (see ``isPaused``).
    let onBackpressure: @Sendable () -> Void
    /// Bytes reached the file: (this write, total written).
    let onWrite: @Sendable (Int64, Int64) -> Void
    /// Writing failed; the task must end with this error.
    let onFailure: @Sendable (TransferError) -> Void

    /// The queue a new file's operations run on (see ``DownloadFile/init(directory:name:target:)``).
    private let fileQueueTarget: DispatchQueue?
    /// Runs what the file's queue reports, in its order (see `init`).
    private let callbacksOn: @Sendable (@escaping @Sendable () -> Void) -> Void

    /// - Parameter callbacksOn: Where `onWrite`, `onFailure`, the backpressure change of a finished write and the
    ///   completions of `finish`, `keepForResume` and `discard` run, in the order the file's queue reported them (so
    ///   the last write is reported before the file is handed over). By default they run on the file's queue. The
    ///   engine passes one event loop: its callbacks are engine jobs, and a job run on the file's own thread makes
    ///   that thread run the jobs the network queues meanwhile, appends included, so the writes wait behind them
    ///   while the connection reads on, and the download buffers many times its high watermark.
    init(
        directory: URL,
        fileQueueTarget: DispatchQueue? = nil,
        callbacksOn: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void = { $0() },
        onBackpressure: @escaping @Sendable () -> Void,
        onWrite: @escaping @Sendable (Int64, Int64) -> Void,
        onFailure: @escaping @Sendable (TransferError) -> Void
    ) {
        self.directory = directory
        self.fileQueueTarget = fileQueueTarget
        self.callbacksOn = callbacksOn
        self.onBackpressure = onBackpressure
        self.onWrite = onWrite
        self.onFailure = onFailure
    }

    /// Whether the sink wants the transfer paused: too many bytes wait to be written.
    var isPaused: Bool { state.withLockedValue { $0.paused } }

    /// Starts writing a new file, or continues `existing` (resume) after `offset` bytes.
    func open(existing: URL? = nil, offset: Int64 = 0) {
        let directory = self.directory
        let target = fileQueueTarget
        let opened: DownloadFile? = state.withLockedValue { state in
            guard !state.ended else { return nil }
            let file =
                if let existing {
                    DownloadFile(existing: existing, keepingFirst: offset)
                } else {
                    DownloadFile(directory: directory, target: target)
                }
            state.file = file
            state.written = offset
            return file
        }
        guard let file = opened else { return }
        file.ready { [self] result in
            if case .failure(let error) = result { callbacksOn { [self] in onFailure(error) } }
        }
    }

    /// Queues `data` for writing.
    func append(_ data: Data) {
        let count = data.count
        let (file, pause): (DownloadFile?, Bool) = state.withLockedValue { state in
            state.outstanding += count
            let pause = !state.paused && state.outstanding > Self.highWatermark
            if pause { state.paused = true }
            return (state.file, pause)
        }
        guard let file else { return }
        if pause { onBackpressure() }
        file.append(data) { [self] result in
            switch result {
            case .success:
                didWrite(count)
            case .failure(let error):
                let first = state.withLockedValue { state in
                    defer { state.failed = true }
                    return !state.failed
                }
                if first { callbacksOn { [self] in onFailure(error) } }
            }
        }
    }

    private func didWrite(_ count: Int) {
        let (total, resume): (Int64, Bool) = state.withLockedValue { state in
            state.outstanding -= count
            state.written += Int64(count)
            let resume = state.paused && state.outstanding < Self.lowWatermark
            if resume { state.paused = false }
            return (state.written, resume)
        }
        callbacksOn { [self] in
            if resume { onBackpressure() }
            onWrite(Int64(count), total)
        }
    }

    /// Waits for every write and closes the file; the result is its location (a new name: see
    /// ``DownloadFile/closeAndHandOver(_:)``).
    func finish(_ completion: @escaping @Sendable (Result<URL, TransferError>) -> Void) {
        if state.withLockedValue({ $0.file == nil && !$0.ended }) {
            // No body ever arrived (e.g. HEAD): an empty file still makes a download.
            open()
        }
        guard let file = end() else {
            return completion(.failure(.cannotWriteToFile("the download ended before its file was opened")))
        }
        file.closeAndHandOver { [self] result in callbacksOn { completion(result) } }
    }

    /// Waits for every write and closes the file, keeping it for resume data.
    func keepForResume(_ completion: @escaping @Sendable (Result<(url: URL, length: Int64), TransferError>) -> Void) {
        guard let file = end() else {
            return completion(.failure(.cannotOpenFile("nothing was downloaded")))
        }
        file.close { [self] result in
            let written = state.withLockedValue { $0.written }
            callbacksOn { completion(result.map { (file.url, written) }) }
        }
    }

    /// Deletes the file: no partial file is left where a complete one was promised. `completion` runs once the file
    /// is gone.
    func discard(then completion: (@Sendable () -> Void)? = nil) {
        guard let file = end() else {
            completion?()
            return
        }
        file.remove { [self] in callbacksOn { completion?() } }
    }

    /// Marks the download ended and returns its file, if one was opened.
    @discardableResult
    private func end() -> DownloadFile? {
        state.withLockedValue { state in
            state.ended = true
            return state.file
        }
    }
}
