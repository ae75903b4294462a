import NIOCore
import Testing

@testable import CourierTransport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The file handle behind a body's `sendfile(2)` writes closes only once the body released it and no write that uses
/// it is still queued: a descriptor closed under a queued write would have the socket send whatever file reused the
/// number.
@Suite("FileRegionLease")
struct FileRegionLeaseTests {
    private func lease() throws -> FileRegionLease {
        let descriptor = open("/dev/null", O_RDONLY | O_CLOEXEC)
        try #require(descriptor >= 0)
        return FileRegionLease(handle: NIOFileHandle(_deprecatedTakingOwnershipOfDescriptor: descriptor))
    }

    @Test func releasedWithWritesQueuedItClosesAfterTheLastWriteCompleted() throws {
        let lease = try lease()
        lease.writeQueued()
        lease.writeQueued()
        lease.release()
        #expect(lease.handle.isOpen)
        lease.writeCompleted()
        #expect(lease.handle.isOpen)
        lease.writeCompleted()
        #expect(!lease.handle.isOpen)
    }

    @Test func writesCompletedBeforeTheReleaseLeaveItOpenUntilTheRelease() throws {
        let lease = try lease()
        lease.writeQueued()
        lease.writeCompleted()
        #expect(lease.handle.isOpen)
        lease.release()
        #expect(!lease.handle.isOpen)
    }

    @Test func aLeaseThatGoesAwayUnreleasedClosesItsHandle() throws {
        var lease: FileRegionLease? = try lease()
        let handle = try #require(lease?.handle)
        lease = nil
        #expect(!handle.isOpen)
    }
}
