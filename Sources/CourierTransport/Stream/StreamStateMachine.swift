import CourierHTTP
import NIOCore

/// The bookkeeping of one raw stream connection (a stream task's), without I/O: events in, actions out.
///
/// The app's calls arrive as ``Operation``s, in the order it made them. Reads are served in order from the bytes
/// read so far; the socket is read only while the first read waits for more than is buffered (the connection runs
/// with `autoRead` off), so bytes the app does not ask for are never piled up. Writes go to the channel at once
/// and complete in order. `closeRead` and `closeWrite` take their turn behind the reads, respectively writes, made
/// before them. A barrier (starting TLS, handing the connection to streams) waits until every earlier operation is
/// done and holds every later one until it is done itself, as Darwin's stream task "completes any enqueued reads
/// and writes" first.
///
/// The connection ends cleanly once both sides are closed (the app read up to the end of input or closed the read
/// side, and its `closeWrite` went out) and nothing is pending, or with an error: every pending and later operation
/// then fails with it. Operations made after a clean end are answered as the closed sides dictate.
///
/// Every event comes from the channel's event loop, so the owner (``StreamChannelHandler``) steps the machine
/// there without a lock, and performs the actions after each step.
struct StreamStateMachine {
    /// Identifies an operation (the owner keeps its promise and timer under it).
    typealias ID = Int

    /// What a barrier does once everything before it is done.
    enum Barrier: Equatable, Sendable {
        /// Start TLS on the connection (it ends when the handshake completed).
        case startTLS
        /// Nothing: it only waits for the earlier operations (`captureStreams`).
        case drain
    }

    /// One call of the app.
    enum Operation {
        case read(id: ID, minLength: Int, maxLength: Int)
        case write(id: ID, bytes: ByteBuffer)
        case closeRead(id: ID)
        case closeWrite(id: ID)
        case barrier(id: ID, Barrier)

        var id: ID {
            switch self {
            case .read(let id, _, _), .write(let id, _), .closeRead(let id), .closeWrite(let id), .barrier(let id, _):
                return id
            }
        }
    }

    /// Why an operation failed.
    enum Failure: Equatable {
        /// The connection failed, was cancelled, or a timeout ran out.
        case transfer(TransferError)
        /// A read after `closeRead`.
        case readSideClosed
        /// A write after `closeWrite`.
        case writeSideClosed
    }

    /// What the owner must do.
    enum Action: Equatable {
        /// Open the connection.
        case connect
        /// Complete a read with these bytes (`nil` when none) and whether the end of input was reached.
        case completeRead(ID, ByteBuffer?, atEOF: Bool)
        /// Complete a write, `closeRead`, `closeWrite` or barrier.
        case succeed(ID)
        /// Fail an operation.
        case fail(ID, Failure)
        /// Write (and flush) these bytes; report ``StreamStateMachine/writeFinished(id:error:)``.
        case write(ID, ByteBuffer)
        /// Ask the channel for one read.
        case readFromChannel
        /// Shut down the write side of the socket; report ``StreamStateMachine/outputShutDown(id:)``.
        case shutdownOutput(ID)
        /// Run a barrier; report ``StreamStateMachine/barrierFinished(id:)``.
        case runBarrier(ID, Barrier)
        /// Tell the task.
        case report(StreamConnectionEvent)
        /// Close the channel (the connection is over).
        case close
    }

    private enum Phase {
        case idle, connecting, open, closed
    }

    private enum ReadSideOperation {
        case read(id: ID, minLength: Int, maxLength: Int)
        case closeRead(id: ID)
    }

    private var phase = Phase.idle
    /// Why the connection ended; `nil` while it runs, or after a clean end.
    private var failure: TransferError?
    /// Operations not yet admitted: made before the connection opened, or behind a barrier.
    private var held = CircularBuffer<Operation>()
    /// Admitted reads and `closeRead`s, in order.
    private var reads = CircularBuffer<ReadSideOperation>()
    /// Writes handed to the channel and not finished yet, in order.
    private var writesInFlight = CircularBuffer<ID>()
    /// A `closeWrite` waiting for the writes before it.
    private var pendingCloseWrite: ID?
    private var shutdownInFlight = false
    /// The barrier waiting for the operations before it, or running.
    private var barrier: (id: ID, kind: Barrier, running: Bool)?
    /// Bytes read from the socket that no read took yet.
    private var buffered: ByteBuffer?
    /// A channel read was asked for and its data has not all arrived yet.
    private var channelReadPending = false
    /// The peer closed its write side (end of input).
    private var inputEnded = false
    /// The app closed the read side.
    private var readSideClosed = false
    /// The app closed the write side (later writes fail), possibly not yet shut down on the socket.
    private var writeSideClosed = false
    /// The write side was shut down on the socket.
    private var outputShutDown = false

    /// Whether the connection is over (cleanly or not).
    var isClosed: Bool { phase == .closed }

    // MARK: - Connection

    /// `resume()`: open the connection (once).
    /// The connection will be an existing one handed over (a data task's `.becomeStream`): no connect; it is up
    /// once the handler is in its pipeline.
    mutating func adopting() -> [Action] {
        guard phase == .idle else { return [] }
        phase = .connecting
        return []
    }

    mutating func connectRequested() -> [Action] {
        guard phase == .idle else { return [] }
        phase = .connecting
        return [.connect]
    }

    /// The connection is up: the operations made so far are admitted, in order.
    mutating func connected() -> [Action] {
        guard phase == .connecting else { return phase == .closed ? [.close] : [] }
        phase = .open
        var actions: [Action] = []
        replayHeld(&actions)
        return actions
    }

    /// The connection failed, was cancelled, or closed under the operations: they all fail with `error`.
    mutating func fail(_ error: TransferError) -> [Action] {
        guard phase != .closed else { return [] }
        phase = .closed
        failure = error
        var actions: [Action] = []
        for operation in held {
            actions.append(.fail(operation.id, .transfer(error)))
        }
        for operation in reads {
            switch operation {
            case .read(let id, _, _), .closeRead(let id): actions.append(.fail(id, .transfer(error)))
            }
        }
        for id in writesInFlight {
            actions.append(.fail(id, .transfer(error)))
        }
        if let pendingCloseWrite { actions.append(.fail(pendingCloseWrite, .transfer(error))) }
        if let barrier { actions.append(.fail(barrier.id, .transfer(error))) }
        held.removeAll()
        reads.removeAll()
        writesInFlight.removeAll()
        pendingCloseWrite = nil
        barrier = nil
        buffered = nil
        actions.append(.report(.failed(error)))
        actions.append(.close)
        return actions
    }

    /// The channel closed (reset by the peer, or closed underneath).
    mutating func channelClosed() -> [Action] {
        if phase == .open, outputShutDown {
            // Once its write side is shut down, NIO closes the channel at the end of input instead of reporting the
            // end: the bytes read before it stay to be read, and nothing more will come.
            return inputClosed()
        }
        return fail(.networkConnectionLost("the connection closed"))
    }

    // MARK: - Operations

    /// The app made a call.
    mutating func submit(_ operation: Operation) -> [Action] {
        var actions: [Action] = []
        admit(operation, &actions)
        return actions
    }

    /// The timeout of an operation ran out: it fails, unless it completed already. A write already handed to the
    /// channel still goes out (bytes cannot be taken back from the channel), but its call fails now.
    mutating func timedOut(id: ID) -> [Action] {
        let error = Failure.transfer(.timedOut("the stream task's operation timed out"))
        if let index = held.firstIndex(where: { $0.id == id }) {
            held.remove(at: index)
            return [.fail(id, error)]
        }
        if let index = reads.firstIndex(where: { if case .read(id, _, _) = $0 { return true } else { return false } }) {
            reads.remove(at: index)
            var actions: [Action] = [.fail(id, error)]
            // The next read may be satisfied by what is buffered, or a barrier may now run.
            serveReads(&actions)
            return actions
        }
        if writesInFlight.contains(id) {
            return [.fail(id, error)]
        }
        return []
    }

    // MARK: - Channel events

    /// Bytes arrived.
    mutating func received(_ bytes: ByteBuffer) -> [Action] {
        guard phase == .open, !readSideClosed else { return [] }
        if buffered == nil {
            buffered = bytes
        } else {
            var incoming = bytes
            buffered?.writeBuffer(&incoming)
        }
        var actions: [Action] = []
        serveReads(&actions)
        return actions
    }

    /// The channel's read finished (`channelReadComplete`): read again if a read still waits.
    mutating func channelReadFinished() -> [Action] {
        channelReadPending = false
        guard phase == .open else { return [] }
        var actions: [Action] = []
        serveReads(&actions)
        return actions
    }

    /// The peer closed its write side.
    mutating func inputClosed() -> [Action] {
        guard phase == .open, !inputEnded else { return [] }
        inputEnded = true
        channelReadPending = false
        // Told first, as on Darwin, where bytes may still be there to read when the delegate hears of it.
        var actions: [Action] = [.report(.readClosed)]
        serveReads(&actions)
        return actions
    }

    /// A write handed to the channel finished.
    mutating func writeFinished(id: ID, error: TransferError?) -> [Action] {
        guard phase == .open else { return [] }
        if let error { return fail(error) }
        if let index = writesInFlight.firstIndex(of: id) { writesInFlight.remove(at: index) }
        var actions: [Action] = [.succeed(id)]
        if writesInFlight.isEmpty, let closeWrite = pendingCloseWrite {
            pendingCloseWrite = nil
            shutdownInFlight = true
            actions.append(.shutdownOutput(closeWrite))
        }
        runBarrierIfDrained(&actions)
        finishIfDone(&actions)
        return actions
    }

    /// The write side was shut down (`closeWrite` went out; the peer sees the end of input).
    mutating func outputShutDown(id: ID) -> [Action] {
        guard phase == .open else { return [] }
        shutdownInFlight = false
        outputShutDown = true
        var actions: [Action] = [.succeed(id), .report(.writeClosed)]
        runBarrierIfDrained(&actions)
        finishIfDone(&actions)
        return actions
    }

    /// A barrier finished (for `startTLS`, the handshake completed): the operations behind it are admitted.
    mutating func barrierFinished(id: ID) -> [Action] {
        guard phase == .open, let current = barrier, current.id == id else { return [] }
        barrier = nil
        // A channel read may have been consumed by the barrier's own work (the TLS handshake).
        channelReadPending = false
        var actions: [Action] = [.succeed(id)]
        replayHeld(&actions)
        serveReads(&actions)
        finishIfDone(&actions)
        return actions
    }

    // MARK: - Rules

    private mutating func admit(_ operation: Operation, _ actions: inout [Action]) {
        if phase == .closed {
            actions.append(answerAfterEnd(operation))
            return
        }
        if phase != .open || barrier != nil || !held.isEmpty {
            held.append(operation)
            return
        }
        switch operation {
        case .read(let id, let minLength, let maxLength):
            reads.append(.read(id: id, minLength: minLength, maxLength: maxLength))
            serveReads(&actions)
        case .closeRead(let id):
            reads.append(.closeRead(id: id))
            serveReads(&actions)
        case .write(let id, let bytes):
            guard !writeSideClosed else {
                actions.append(.fail(id, .writeSideClosed))
                return
            }
            writesInFlight.append(id)
            actions.append(.write(id, bytes))
        case .closeWrite(let id):
            guard !writeSideClosed else {
                actions.append(.succeed(id))
                return
            }
            writeSideClosed = true
            if writesInFlight.isEmpty {
                shutdownInFlight = true
                actions.append(.shutdownOutput(id))
            } else {
                pendingCloseWrite = id
            }
        case .barrier(let id, let kind):
            barrier = (id, kind, false)
            runBarrierIfDrained(&actions)
        }
    }

    /// The answer to an operation made after the connection ended.
    private func answerAfterEnd(_ operation: Operation) -> Action {
        if let failure { return .fail(operation.id, .transfer(failure)) }
        switch operation {
        case .read(let id, _, _):
            return readSideClosed ? .fail(id, .readSideClosed) : .completeRead(id, nil, atEOF: true)
        case .write(let id, _):
            return .fail(id, .writeSideClosed)
        case .closeRead(let id), .closeWrite(let id), .barrier(let id, .drain):
            return .succeed(id)
        case .barrier(let id, .startTLS):
            return .fail(id, .transfer(.networkConnectionLost("the connection is closed")))
        }
    }

    private mutating func replayHeld(_ actions: inout [Action]) {
        let waiting = held
        held.removeAll()
        for operation in waiting {
            admit(operation, &actions)
        }
    }

    /// Completes the reads at the head of the queue that can be, and asks the channel for more when the first
    /// one still waits.
    private mutating func serveReads(_ actions: inout [Action]) {
        while let head = reads.first {
            switch head {
            case .closeRead(let id):
                reads.removeFirst()
                readSideClosed = true
                buffered = nil
                actions.append(.succeed(id))
            case .read(let id, let minLength, let maxLength):
                if readSideClosed {
                    reads.removeFirst()
                    actions.append(.fail(id, .readSideClosed))
                    continue
                }
                let limit = max(maxLength, 1)
                // A read waits for at least one byte, also when `minBytes` is 0: an empty answer would say nothing.
                let wanted = min(max(minLength, 1), limit)
                let available = buffered?.readableBytes ?? 0
                guard available >= wanted || inputEnded else {
                    if !channelReadPending {
                        channelReadPending = true
                        actions.append(.readFromChannel)
                    }
                    runBarrierIfDrained(&actions)
                    finishIfDone(&actions)
                    return
                }
                reads.removeFirst()
                let taken = available == 0 ? nil : buffered?.readSlice(length: min(available, limit))
                let remaining = buffered?.readableBytes ?? 0
                if remaining == 0 { buffered = nil }
                actions.append(.completeRead(id, taken, atEOF: inputEnded && remaining == 0))
            }
        }
        runBarrierIfDrained(&actions)
        finishIfDone(&actions)
    }

    private mutating func runBarrierIfDrained(_ actions: inout [Action]) {
        guard let current = barrier, !current.running, reads.isEmpty, writesInFlight.isEmpty,
            pendingCloseWrite == nil, !shutdownInFlight
        else { return }
        if current.kind == .startTLS, let left = buffered?.readableBytes, left > 0 {
            // Bytes that came before the handshake were never protected: later reads would have handed them over
            // as if TLS had (an attacker's text injected behind a STARTTLS answer, CVE-2011-0411's kind). The
            // server sends nothing before the client's hello, so they are a broken server's or an attacker's.
            actions.append(
                contentsOf: fail(
                    .secureConnectionFailed(
                        "\(left) bytes arrived unprotected before the TLS handshake and were not read")))
            return
        }
        barrier?.running = true
        actions.append(.runBarrier(current.id, current.kind))
    }

    /// Ends the connection cleanly once both sides are closed and nothing is pending.
    private mutating func finishIfDone(_ actions: inout [Action]) {
        let readDone = readSideClosed || (inputEnded && (buffered?.readableBytes ?? 0) == 0)
        guard phase == .open, readDone, outputShutDown, reads.isEmpty, writesInFlight.isEmpty, barrier == nil,
            held.isEmpty
        else { return }
        phase = .closed
        actions.append(.report(.finished))
        actions.append(.close)
    }
}
