import CourierTransport
import Foundation
import NIOConcurrencyHelpers

/// The streams `captureStreams()` hands over, over the task's connection.
///
/// Darwin makes them with CoreFoundation's stream pairs; here Courier's own `InputStream` and `OutputStream`
/// subclasses read and write the connection directly (a bound pair, as `Stream.getBoundStreams` makes, would add a
/// copy and a thread to pump it): a read waits for the connection's next bytes
/// (at most one chunk is fetched ahead, so backpressure still reaches the peer), a write returns once its bytes went
/// to the network. Both may be used from any thread, blocking, or scheduled in a run loop with a delegate, which
/// then gets the usual `Stream.Event`s. The connection closes once both streams are closed (or released).
/// Sendable by hand: both streams guard their state with their own lock, and may be used from any thread.
final class CapturedStreamPair: @unchecked Sendable {
    let input: CapturedInputStream
    let output: CapturedOutputStream

    init(connection: StreamConnection) {
        let closer = CapturedConnectionCloser(connection: connection)
        input = CapturedInputStream(connection: connection, closer: closer)
        output = CapturedOutputStream(connection: connection, closer: closer)
    }
}

/// Closes the connection when the second of the two streams closes.
final class CapturedConnectionCloser: Sendable {
    private let connection: StreamConnection
    private let closedSides = NIOLockedValueBox(0)

    init(connection: StreamConnection) {
        self.connection = connection
    }

    /// One stream closed (once per stream).
    func sideClosed() {
        let both = closedSides.withLockedValue { count -> Bool in
            count += 1
            return count == 2
        }
        if both { connection.cancel(.cancelled("the captured streams were closed")) }
    }
}

/// Delivers `Stream.Event`s to a stream's delegate on the run loops the stream was scheduled in, as CoreFoundation's
/// streams do: a timer that fires at once wakes the run loop from any thread.
struct StreamEventPoster {
    private var schedules: [(runLoop: RunLoop, mode: RunLoop.Mode)] = []

    var isScheduled: Bool { !schedules.isEmpty }

    mutating func schedule(_ runLoop: RunLoop, _ mode: RunLoop.Mode) {
        schedules.append((runLoop, mode))
    }

    mutating func remove(_ runLoop: RunLoop, _ mode: RunLoop.Mode) {
        schedules.removeAll { $0.runLoop === runLoop && $0.mode == mode }
    }

    /// Posts `event` for `stream` to `delegate` (`nil`: nothing to tell). `stillHolds`, when given, is asked on the
    /// run loop just before the delegate would be called: an event whose condition no longer holds (bytes another
    /// call read meanwhile) is dropped, as CoreFoundation drops a stale one.
    func post(
        _ event: Stream.Event, of stream: Stream, to delegate: (any StreamDelegate)?,
        stillHolds: (@Sendable () -> Bool)? = nil
    ) {
        guard let delegate else { return }
        let target = UncheckedDelegate(delegate: delegate, stream: stream)
        for (runLoop, mode) in schedules {
            let timer = Timer(timeInterval: 0, repeats: false) { _ in
                if let stillHolds, !stillHolds() { return }
                target.delegate.stream(target.stream, handle: event)
            }
            runLoop.add(timer, forMode: mode)
        }
    }
}

/// A stream and its delegate handed to the run loop the stream was scheduled on: only used there.
private struct UncheckedDelegate: @unchecked Sendable {
    let delegate: any StreamDelegate
    let stream: Stream
}

/// A captured stream handed to the connection's completions: its state is guarded by its own lock.
struct UncheckedStream<S: Stream>: @unchecked Sendable {
    let stream: S
}
