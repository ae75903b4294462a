import NIOCore
import NIOPosix

/// The event loops every mock server, proxy and TCP server of this module runs on.
///
/// They are the servers' own, not `MultiThreadedEventLoopGroup.singleton`, which the client under test (Courier
/// among others) is likely to use: a server busy on a loop (hashing a large upload, unmasking a large WebSocket
/// message, encrypting a large body) then cannot hold back the client's events queued behind it on the same
/// thread, and what the client sees of a slow or stalled server is only what the test scripts. Like the singleton,
/// the group lives as long as the process and is never shut down.
public enum MockServerEventLoops {
    /// The group: one loop per core, and at least two.
    public static let group: MultiThreadedEventLoopGroup = MultiThreadedEventLoopGroup(
        numberOfThreads: max(2, System.coreCount))
}
