import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import courier

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `courier`'s signal handling, in this process: the handler is given a `finish` that records the exit status
/// instead of exiting.
@Suite("courier: catching an interruption", .serialized)
struct InterruptionHandlerTests {
    /// The tool used to ignore the signal and arm a dispatch signal source, which libdispatch does later on its own
    /// thread; a signal in between was discarded by the kernel and `courier get` downloaded on to the end after a
    /// Ctrl-C (seen once in a full test run). A signal sent the moment the handler exists must be caught.
    @Test func aSignalRightAfterTheHandlerStartsIsCaught() async throws {
        let gate = AsyncGate()
        let record = NIOLockedValueBox<(cleanedUp: Int, statuses: [Int32])>((0, []))
        let handler = InterruptionHandler(
            onInterrupt: { record.withLockedValue { $0.cleanedUp += 1 } },
            finish: { status in
                record.withLockedValue { $0.statuses.append(status) }
                gate.open()
            })
        defer { handler.stop() }
        kill(getpid(), SIGTERM)
        await gate.wait(timeout: .seconds(30))
        #expect(handler.isInterrupting)
        let seen = record.withLockedValue { $0 }
        #expect(seen.cleanedUp == 1)
        #expect(seen.statuses == [128 + SIGTERM])
    }

    /// While it runs the handler holds the signals; `stop()` gives them back the actions they had. (That a signal
    /// ignored at the start stays ignored is `anIgnoredHangupStaysIgnored`, end to end: changing a signal's action in
    /// this process would reach the children other tests start meanwhile.)
    @Test func stopRestoresTheActions() {
        let before = Self.handlerAddress(SIGTERM)
        let handler = InterruptionHandler(onInterrupt: {}, finish: { _ in })
        #expect(Self.handlerAddress(SIGTERM) != before)
        handler.stop()
        #expect(Self.handlerAddress(SIGTERM) == before)
    }

    /// The signal pipe is close-on-exec from the moment it exists (`pipe2`), not a moment later: a child another
    /// thread started in between would hold it open.
    @Test func theSignalPipeIsCloseOnExec() throws {
        let ends = try #require(InterruptionHandler.makePipe())
        defer { for end in ends { close(end) } }
        for end in ends {
            #expect(fcntl(end, F_GETFD) & FD_CLOEXEC != 0)
        }
    }

    private static func handlerAddress(_ number: Int32) -> Int {
        var action = sigaction()
        sigaction(number, nil, &action)
        #if canImport(Glibc)
            return unsafeBitCast(action.__sigaction_handler.sa_handler, to: Int.self)
        #else
            return unsafeBitCast(action.__sigaction_u.__sa_handler, to: Int.self)
        #endif
    }
}
