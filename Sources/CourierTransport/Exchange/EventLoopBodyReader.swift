import NIOCore
import NIOPosix

/// A ``TransportBodyReader`` that also reads without a Swift task: the read runs off the event loop (Courier's file
/// reader uses NIO's thread pool, its stream reader a queue of its own) and its result comes back on `eventLoop`. The transport prefers it for every
/// chunk. A chunk then crosses threads twice (event loop to pool and back) instead of four times (event loop, a task
/// on the global executor, the pool, the task, the event loop); the socket waits for each chunk, so the hops are the
/// upload's speed, not only its CPU.
public protocol EventLoopBodyReader: TransportBodyReader {
    /// Up to `maxLength` bytes, or `nil` at the end of the body; the future completes on `eventLoop`.
    func read(maxLength: Int, on eventLoop: any EventLoop) -> EventLoopFuture<ByteBuffer?>
}

extension EventLoopBodyReader {
    /// The task form of ``read(maxLength:on:)``, through one of NIO's shared event loops: a reader writes its read
    /// once.
    public func read(maxLength: Int) async throws -> ByteBuffer? {
        try await read(maxLength: maxLength, on: MultiThreadedEventLoopGroup.singleton.any()).get()
    }
}
