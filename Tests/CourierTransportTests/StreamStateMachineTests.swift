import CourierHTTP
import NIOCore
import Testing

@testable import CourierTransport

/// A stream connection's bookkeeping: calls held until the connection opens, reads on demand and in order, the end
/// of input, half-closes, barriers, timeouts and failures.
@Suite("StreamStateMachine")
struct StreamStateMachineTests {
    typealias Machine = StreamStateMachine

    private func open() -> Machine {
        var machine = Machine()
        #expect(machine.connectRequested() == [.connect])
        #expect(machine.connected().isEmpty)
        return machine
    }

    @Test func callsWaitForTheConnectionInOrder() {
        var machine = Machine()
        #expect(machine.submit(.write(id: 1, bytes: ByteBuffer(string: "a"))).isEmpty)
        #expect(machine.submit(.read(id: 2, minLength: 1, maxLength: 5)).isEmpty)
        #expect(machine.connectRequested() == [.connect])
        #expect(machine.connectRequested().isEmpty)
        #expect(machine.connected() == [.write(1, ByteBuffer(string: "a")), .readFromChannel])
    }

    @Test func readsOnlyWhileAReadWaitsAndServesReadsInOrder() {
        var fresh = open()
        #expect(fresh.submit(.read(id: 1, minLength: 3, maxLength: 3)) == [.readFromChannel])
        #expect(fresh.submit(.read(id: 2, minLength: 2, maxLength: 10)).isEmpty)
        #expect(fresh.received(ByteBuffer(string: "ab")).isEmpty)
        // Still short of the first read's minimum: one more channel read once this one is over.
        #expect(fresh.channelReadFinished() == [.readFromChannel])
        #expect(
            fresh.received(ByteBuffer(string: "cdef")) == [
                .completeRead(1, ByteBuffer(string: "abc"), atEOF: false),
                .completeRead(2, ByteBuffer(string: "def"), atEOF: false),
            ])
        // Nothing waits: no further read of the socket.
        #expect(fresh.channelReadFinished().isEmpty)
    }

    @Test func theEndOfInputHandsOverWhatIsLeftThenNothing() {
        var machine = open()
        #expect(machine.submit(.read(id: 1, minLength: 10, maxLength: 20)) == [.readFromChannel])
        #expect(machine.received(ByteBuffer(string: "xyz")).isEmpty)
        #expect(
            machine.inputClosed() == [.report(.readClosed), .completeRead(1, ByteBuffer(string: "xyz"), atEOF: true)])
        #expect(machine.submit(.read(id: 2, minLength: 1, maxLength: 1)) == [.completeRead(2, nil, atEOF: true)])
    }

    @Test func atTheEndOfInputAReadTakesNoMoreThanItsMaximum() {
        var machine = open()
        #expect(machine.submit(.read(id: 1, minLength: 1, maxLength: 2)) == [.readFromChannel])
        #expect(
            machine.received(ByteBuffer(string: "abcde")) == [.completeRead(1, ByteBuffer(string: "ab"), atEOF: false)])
        #expect(machine.inputClosed() == [.report(.readClosed)])
        #expect(
            machine.submit(.read(id: 2, minLength: 5, maxLength: 2)) == [
                .completeRead(2, ByteBuffer(string: "cd"), atEOF: false)
            ])
        #expect(
            machine.submit(.read(id: 3, minLength: 5, maxLength: 5)) == [
                .completeRead(3, ByteBuffer(string: "e"), atEOF: true)
            ])
    }

    @Test func closeWriteWaitsForEarlierWritesAndRefusesLaterOnes() {
        var machine = open()
        #expect(machine.submit(.write(id: 1, bytes: ByteBuffer(string: "a"))) == [.write(1, ByteBuffer(string: "a"))])
        #expect(machine.submit(.closeWrite(id: 2)).isEmpty)
        #expect(machine.submit(.write(id: 3, bytes: ByteBuffer(string: "b"))) == [.fail(3, .writeSideClosed)])
        #expect(machine.writeFinished(id: 1, error: nil) == [.succeed(1), .shutdownOutput(2)])
        #expect(machine.outputShutDown(id: 2) == [.succeed(2), .report(.writeClosed)])
    }

    @Test func bothSidesClosedEndTheConnectionCleanly() {
        var machine = open()
        #expect(machine.submit(.closeWrite(id: 1)) == [.shutdownOutput(1)])
        #expect(machine.outputShutDown(id: 1) == [.succeed(1), .report(.writeClosed)])
        #expect(machine.submit(.closeRead(id: 2)) == [.succeed(2), .report(.finished), .close])
        #expect(machine.submit(.read(id: 3, minLength: 1, maxLength: 1)) == [.fail(3, .readSideClosed)])
    }

    @Test func aBarrierWaitsForEarlierCallsAndHoldsLaterOnes() {
        var machine = open()
        #expect(machine.submit(.read(id: 1, minLength: 1, maxLength: 1)) == [.readFromChannel])
        #expect(machine.submit(.barrier(id: 2, .startTLS)).isEmpty)
        #expect(machine.submit(.write(id: 3, bytes: ByteBuffer(string: "w"))).isEmpty)
        #expect(
            machine.received(ByteBuffer(string: "r")) == [
                .completeRead(1, ByteBuffer(string: "r"), atEOF: false), .runBarrier(2, .startTLS),
            ])
        #expect(machine.barrierFinished(id: 2) == [.succeed(2), .write(3, ByteBuffer(string: "w"))])
    }

    /// A STARTTLS answer read in small pieces, with text behind it in the same segment (an attacker's, injected
    /// before the handshake): the handshake must not start with those bytes kept. They were handed to the first read
    /// after it, as if TLS had protected them. The connection fails instead.
    @Test func bytesLeftUnreadBeforeStartTLSFailTheConnection() {
        var machine = open()
        #expect(machine.submit(.read(id: 1, minLength: 1, maxLength: 3)) == [.readFromChannel])
        #expect(machine.submit(.barrier(id: 2, .startTLS)).isEmpty)
        #expect(machine.submit(.read(id: 3, minLength: 1, maxLength: 100)).isEmpty)
        let actions = machine.received(ByteBuffer(string: "220INJECTED"))
        #expect(actions.first == .completeRead(1, ByteBuffer(string: "220"), atEOF: false))
        #expect(!actions.contains(.runBarrier(2, .startTLS)))
        #expect(
            actions.contains {
                if case .fail(2, .transfer(let error)) = $0 {
                    error.urlErrorCode == .secureConnectionFailed
                } else {
                    false
                }
            })
        #expect(actions.contains { if case .fail(3, _) = $0 { true } else { false } })
        #expect(!actions.contains { if case .completeRead(3, _, _) = $0 { true } else { false } })
        #expect(machine.isClosed)
    }

    @Test func aTimeoutFailsOnlyItsCall() {
        var machine = open()
        #expect(machine.submit(.read(id: 1, minLength: 5, maxLength: 5)) == [.readFromChannel])
        #expect(machine.submit(.read(id: 2, minLength: 1, maxLength: 5)).isEmpty)
        #expect(machine.received(ByteBuffer(string: "ab")).isEmpty)
        let timedOut = machine.timedOut(id: 1)
        #expect(timedOut.first == .fail(1, .transfer(.timedOut("the stream task's operation timed out"))))
        #expect(timedOut.dropFirst() == [.completeRead(2, ByteBuffer(string: "ab"), atEOF: false)])
        #expect(machine.timedOut(id: 1).isEmpty)
    }

    @Test func aFailureFailsEveryPendingAndLaterCall() {
        var machine = Machine()
        #expect(machine.submit(.read(id: 1, minLength: 1, maxLength: 1)).isEmpty)
        let error = TransferError.cannotConnectToHost("refused")
        #expect(machine.fail(error) == [.fail(1, .transfer(error)), .report(.failed(error)), .close])
        #expect(machine.fail(error).isEmpty)
        #expect(machine.submit(.write(id: 2, bytes: ByteBuffer())) == [.fail(2, .transfer(error))])
        #expect(machine.connected() == [.close])
    }
}
