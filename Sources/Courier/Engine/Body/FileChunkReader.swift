import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// One `read(2)` of a file descriptor straight into a new `ByteBuffer`: no `Data` in between, and one system call
/// for the whole chunk (`FileHandle.read(upToCount:)` reads a block at a time, 4 KiB here, and copies into a
/// `Data` that then had to be copied again). Blocking: call it off the event loops.
enum FileChunkReader {
    /// What one read gave.
    enum Outcome {
        /// Bytes read (never empty).
        case bytes(ByteBuffer)
        /// The end of the file.
        case end
        /// `read(2)` failed with this `errno`.
        case failed(Int32)
    }

    /// Reads up to `maxLength` bytes at the descriptor's position, retrying when a signal interrupts the call.
    static func chunk(of descriptor: Int32, maxLength: Int) -> Outcome {
        var buffer = ByteBuffer()
        var failure: Int32 = 0
        let count = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: maxLength) { bytes in
            var result: Int
            repeat {
                result = read(descriptor, bytes.baseAddress, maxLength)
            } while result < 0 && errno == EINTR
            if result < 0 { failure = errno }
            return max(result, 0)
        }
        if failure != 0 { return .failed(failure) }
        if count == 0 { return .end }
        // A short read (a small file, the last chunk) would keep the whole `maxLength` of storage alive for as long
        // as the chunk waits to be written: give it a buffer of its size.
        if count < maxLength / 2 { return .bytes(ByteBuffer(buffer: buffer)) }
        return .bytes(buffer)
    }
}
