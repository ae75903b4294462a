import NIOCore

/// The file handle behind the `FileRegion` writes of one request body. It closes once the body no longer needs it
/// and nothing that uses it is still running: a queued write, or a region's preparation on the thread pool. A
/// descriptor closed under a queued write would have the socket send whatever file reused its number.
///
/// Lives on the connection's event loop; each use's completion holds the lease, so it outlives a writer that went
/// away with writes still queued.
final class FileRegionLease {
    let handle: NIOFileHandle
    private var uses = 0
    private var released = false

    init(descriptor: Int32) {
        handle = NIOFileHandle(_deprecatedTakingOwnershipOfDescriptor: descriptor)
    }

    deinit {
        // Every use holds the lease until it ended: nothing can use the handle any more.
        if handle.isOpen { try? handle.close() }
    }

    /// The descriptor, for a use that ``useBegan()`` counts.
    var descriptor: Int32 {
        (try? handle.withUnsafeFileDescriptor { $0 }) ?? -1
    }

    /// A write of a region, or a region's preparation, started.
    func useBegan() {
        uses += 1
    }

    /// A use ended (a write completed or failed with the channel, a preparation returned).
    func useEnded() {
        uses -= 1
        closeIfUnused()
    }

    /// The body needs the handle no more: it closes as soon as its uses ended.
    func release() {
        released = true
        closeIfUnused()
    }

    private func closeIfUnused() {
        if released, uses == 0, handle.isOpen { try? handle.close() }
    }
}
