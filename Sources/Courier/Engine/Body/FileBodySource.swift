import CourierHTTP
import CourierTransport
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A request body read from a file in chunks on NIO's thread pool; the file is never read whole.
struct FileBodySource: TransportBodySource {
    let url: URL

    /// The size of the file, checking that it exists and is a readable regular file.
    ///
    /// `stat(2)`, not `FileManager.attributesOfItem`, which describes a symbolic link itself (its type, and the
    /// length of the path it holds) rather than the file it names: the upload opens, and so reads, the file the link
    /// names. Only a regular file has a length to announce: a FIFO or a device reports 0, could block the open for
    /// ever and never end, so it is refused before anything is sent (as `file:` URLs refuse them).
    static func length(of url: URL) throws(TransferError) -> Int64 {
        let path = url.path
        var status = stat()
        guard stat(path, &status) == 0 else {
            throw FileAccessFailure.error(errno: errno, file: "the file to upload \(path)")
        }
        switch status.st_mode & S_IFMT {
        case S_IFREG:
            break
        case S_IFDIR:
            throw .fileDoesNotExist("the file to upload is a directory: \(path)")
        default:
            throw .cannotOpenFile("the file to upload is not a regular file: \(path)")
        }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw .noPermissionsToReadFile("the file to upload cannot be read: \(path)")
        }
        return Int64(status.st_size)
    }

    func makeReader() async throws -> any TransportBodyReader {
        let path = url.path
        return try await NIOThreadPool.singleton.runIfActive { () throws -> FileBodyReader in
            // Each pass (a retry, a 307) opens the path again: what is there now must still be a regular file, or
            // a FIFO put in its place would block this thread for ever.
            let (descriptor, _) = try RegularFileOpening.open(path, file: "the file to upload \(path)") {
                .fileDoesNotExist("the file to upload is a directory: \(path)")
            }
            return FileBodyReader(descriptor: descriptor)
        }
    }
}

/// Reads the chunks of one ``FileBodySource`` pass from the descriptor it owns. The descriptor is closed once, by
/// `close()` or when the reader goes away, and never while a read uses it: a `close()` during a read is carried out
/// when the read ends, and a read after `close()` fails instead of reading whatever file reused the number. A plain
/// connection sends the file with `sendfile(2)` from a duplicate of the descriptor instead of reading it.
private final class FileBodyReader: EventLoopBodyReader, FileRegionBodyReader {
    private struct State {
        var reading = false
        var closeRequested = false
        var closed = false
    }

    private let descriptor: Int32
    private let state = NIOLockedValueBox(State())

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit {
        // Nothing reads any more: a running read holds the reader.
        if !state.withLockedValue({ $0.closed }) { closeDescriptor(descriptor) }
    }

    func read(maxLength: Int, on eventLoop: any EventLoop) -> EventLoopFuture<ByteBuffer?> {
        do {
            try beginRead()
        } catch {
            return eventLoop.makeFailedFuture(error)
        }
        let descriptor = self.descriptor
        return NIOThreadPool.singleton.runIfActive(eventLoop: eventLoop) {
            FileChunkReader.chunk(of: descriptor, maxLength: maxLength)
        }
        .always { _ in self.readEnded() }
        .flatMapThrowing { try Self.chunk(from: $0) }
    }

    /// Marks a read as running; a read after `close()`, or beside another read, is refused.
    private func beginRead() throws {
        let mayRead = state.withLockedValue { state in
            guard !state.closeRequested, !state.reading else { return false }
            state.reading = true
            return true
        }
        guard mayRead else {
            throw TransferError.cannotOpenFile("the file to upload was closed, or is being read, already")
        }
    }

    private static func chunk(from outcome: FileChunkReader.Outcome) throws -> ByteBuffer? {
        switch outcome {
        case .bytes(let buffer):
            return buffer
        case .end:
            return nil
        case .failed(let code):
            throw TransferError.cannotOpenFile(
                "reading the file to upload failed: \(String(cString: strerror(code)))")
        }
    }

    func close() {
        let closesNow = state.withLockedValue { state in
            guard !state.closeRequested else { return false }
            state.closeRequested = true
            guard !state.reading else { return false }
            state.closed = true
            return true
        }
        if closesNow { closeDescriptor(descriptor) }
    }

    /// A duplicate of the descriptor (close-on-exec, like the original), which the caller owns and closes.
    func makeRegionDescriptor() -> Int32? {
        let duplicate = state.withLockedValue { state -> Int32 in
            guard !state.closeRequested else { return -1 }
            return fcntl(descriptor, F_DUPFD_CLOEXEC, 0)
        }
        return duplicate >= 0 ? duplicate : nil
    }

    /// A read ended: carry out a `close()` that came meanwhile.
    private func readEnded() {
        let closesNow = state.withLockedValue { state in
            state.reading = false
            guard state.closeRequested, !state.closed else { return false }
            state.closed = true
            return true
        }
        if closesNow { closeDescriptor(descriptor) }
    }
}

/// `close(2)`, out of the reader's scope, where its own `close()` hides the C function.
private func closeDescriptor(_ descriptor: Int32) {
    _ = close(descriptor)
}
