import NIOCore

/// The file handle behind the `FileRegion` writes of one request body, closed once the body no longer needs it and
/// no write that uses it is still queued in the channel: a descriptor closed under a queued write would have the
/// socket send whatever file reused its number.
///
/// Lives on the connection's event loop; each write's completion holds the lease, so it outlives a writer that went
/// away with writes still queued.
final class FileRegionLease {
    let handle: NIOFileHandle
    private var pendingWrites = 0
    private var released = false

    init(handle: NIOFileHandle) {
        self.handle = handle
    }

    deinit {
        // Every write holds the lease until it completed: nothing can use the handle any more.
        if handle.isOpen { try? handle.close() }
    }

    /// A write of a region of the file was queued.
    func writeQueued() {
        pendingWrites += 1
    }

    /// A queued write completed (written, or failed with the channel).
    func writeCompleted() {
        pendingWrites -= 1
        closeIfUnused()
    }

    /// The body needs the handle no more: it closes as soon as its queued writes completed.
    func release() {
        released = true
        closeIfUnused()
    }

    private func closeIfUnused() {
        if released, pendingWrites == 0, handle.isOpen { try? handle.close() }
    }
}
