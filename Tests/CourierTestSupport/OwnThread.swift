import Foundation

/// Runs blocking or CPU-heavy work (a `waitpid`, a read until end of file, seconds of parsing in a debug build) on a
/// thread of its own and returns its result.
///
/// Not on `DispatchQueue.global()` nor in a task: on Linux both take their threads from the one pool, as wide as the
/// machine has cores, that also runs Swift concurrency's jobs, the sessions' delegate queues and timers. Work that
/// holds one of those threads for seconds holds up every test running at the time; on a 2-core machine two such
/// tests stalled the whole suite (timers late by seconds, requests that "timed out", tests that never finished). A
/// thread of its own is time-sliced with the others by the kernel instead.
public func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        let thread = Thread { continuation.resume(returning: work()) }
        thread.stackSize = 1 << 20
        thread.start()
    }
}

/// ``onOwnThread(_:)`` for work that throws: the error is rethrown to the caller.
public func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await onOwnThread { Result { try work() } }.get()
}
