import Foundation

#if canImport(Courier)
    import Courier
#elseif canImport(FoundationNetworking)
    import FoundationNetworking
#endif

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Puts a finished download where the app asked, all or nothing: `rename(2)` when the file stays on its file
/// system, else a complete copy into a new private file beside the target (`O_EXCL`, 0600) renamed over it. An
/// existing file at the target is replaced only by that rename, never written in place; on failure the target is
/// as it was and no partial file remains. (`FileManager.moveItem` copies across file systems straight into the
/// target, so a failed copy would leave half a file there.)
enum FilePlacement {
    /// Moves `source` to `target`. `renaming` is `rename(2)`; tests replace it to take the copying path.
    static func place(
        _ source: URL, at target: URL, renaming: (String, String) -> Int32 = { rename($0, $1) }
    ) throws {
        if renaming(source.path, target.path) == 0 { return }
        let failure = errno
        guard failure == EXDEV else { throw POSIXError(POSIXErrorCode(rawValue: failure) ?? .EIO) }
        let temporary = target.deletingLastPathComponent()
            .appendingPathComponent(".\(target.lastPathComponent).courier-\(UUID().uuidString)")
        let descriptor = open(temporary.path, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        let output = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        do {
            let input = try FileHandle(forReadingFrom: source)
            defer { try? input.close() }
            while let chunk = try input.read(upToCount: 1 << 20), !chunk.isEmpty {
                try output.write(contentsOf: chunk)
            }
            try output.synchronize()
            try output.close()
            guard rename(temporary.path, target.path) == 0 else {
                throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            }
        } catch {
            try? output.close()
            unlink(temporary.path)
            throw error
        }
        unlink(source.path)
    }
}
