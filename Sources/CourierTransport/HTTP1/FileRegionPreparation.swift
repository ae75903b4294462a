import CourierHTTP

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// What is done on NIO's thread pool before a region of a file is queued for `sendfile(2)` on the event loop: the
/// checks the chunked reads make, and the disk reads themselves.
///
/// `sendfile(2)` on the event loop must not wait for a disk: a file not in the page cache (cold, on a slow disk or a
/// network file system) would stall every connection of that loop. So the region is first sent to `/dev/null`
/// here, which reads its pages into the page cache as a `read(2)` would, without copying them into the process,
/// and waits for the disk where waiting is allowed. The loop's `sendfile(2)` then finds them cached (a page evicted
/// in between is read on the loop: the rare case every `sendfile` server accepts). Linux only: elsewhere files are
/// read in chunks.
enum FileRegionPreparation {
    enum Outcome: Sendable {
        case ready
        case failed(TransferError)
        /// The file's file system cannot splice its pages (`sendfile(2)` says `EINVAL`): it is read in chunks.
        case unsupported
    }

    /// `/dev/null`, opened once for every region; `-1` where it cannot be opened (or off Linux), and files are then
    /// read in chunks.
    #if os(Linux)
        static let discard: Int32 = open("/dev/null", O_WRONLY | O_CLOEXEC)
    #else
        static let discard: Int32 = -1
    #endif

    /// Whether regions can be prepared at all.
    static var isAvailable: Bool { discard >= 0 }

    /// Checks that the file behind `descriptor` still holds the region `start..<end` of a body of `length` bytes
    /// (and, at the last region, no more than `length`), and brings the region into the page cache.
    static func prepare(descriptor: Int32, start: Int64, end: Int64, length: Int64) -> Outcome {
        guard let size = size(of: descriptor) else {
            return .failed(.cannotOpenFile("the size of the file to upload cannot be read any more"))
        }
        if size < end { return .failed(RequestBodyLengthMismatch.endedEarly(after: size, of: length)) }
        if end == length, size > length { return .failed(RequestBodyLengthMismatch.tooLong(length)) }
        #if os(Linux)
            var offset = off_t(start)
            while Int64(offset) < end {
                let sent = sendfile(discard, descriptor, &offset, Int(end - Int64(offset)))
                if sent < 0 {
                    if errno == EINTR { continue }
                    if errno == EINVAL || errno == ENOSYS { return .unsupported }
                    let reason = String(cString: strerror(errno))
                    return .failed(.cannotOpenFile("reading the file to upload failed: \(reason)"))
                }
                // The file shrank since the size was read.
                if sent == 0 {
                    return .failed(RequestBodyLengthMismatch.endedEarly(after: Int64(offset), of: length))
                }
            }
            return .ready
        #else
            return .unsupported
        #endif
    }

    /// The file's size now, or `nil` when `fstat(2)` fails.
    static func size(of descriptor: Int32) -> Int64? {
        var status = stat()
        return fstat(descriptor, &status) == 0 ? Int64(status.st_size) : nil
    }
}
