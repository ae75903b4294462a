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
#endif

/// A request body read from a file in chunks on NIO's thread pool; the file is never read whole.
struct FileBodySource: TransportBodySource {
    let url: URL

    /// The size of the file, checking that it exists and is a readable regular file.
    static func length(of url: URL) throws(TransferError) -> Int64 {
        let attributes: [FileAttributeKey: Any]
        do {
            attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        } catch {
            throw .fileDoesNotExist("the file to upload does not exist: \(url.path)")
        }
        if let type = attributes[.type] as? FileAttributeType, type == .typeDirectory {
            throw .fileDoesNotExist("the file to upload is a directory: \(url.path)")
        }
        guard FileManager.default.isReadableFile(atPath: url.path) else {
            throw .noPermissionsToReadFile("the file to upload cannot be read: \(url.path)")
        }
        return (attributes[.size] as? NSNumber)?.int64Value ?? 0
    }

    func makeReader() async throws -> any TransportBodyReader {
        let path = url.path
        return try await NIOThreadPool.singleton.runIfActive { () throws -> FileBodyReader in
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else {
                throw TransferError.cannotOpenFile(
                    "cannot open the file to upload: \(path): \(String(cString: strerror(errno)))")
            }
            return FileBodyReader(descriptor: descriptor)
        }
    }
}

/// Reads the chunks of one ``FileBodySource`` pass from the descriptor it owns. The body writer runs one read at a
/// time and closes the reader only when no read runs.
private final class FileBodyReader: TransportBodyReader {
    private let descriptor: Int32
    private let isOpen = NIOLockedValueBox(true)

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit {
        close()
    }

    func read(maxLength: Int) async throws -> ByteBuffer? {
        let descriptor = self.descriptor
        return try await NIOThreadPool.singleton.runIfActive {
            switch FileChunkReader.chunk(of: descriptor, maxLength: maxLength) {
            case .bytes(let buffer):
                return buffer
            case .end:
                return nil
            case .failed(let code):
                throw TransferError.cannotOpenFile(
                    "reading the file to upload failed: \(String(cString: strerror(code)))")
            }
        }
    }

    func close() {
        let wasOpen = isOpen.withLockedValue { isOpen in
            defer { isOpen = false }
            return isOpen
        }
        if wasOpen { closeDescriptor(descriptor) }
    }
}

/// `close(2)`, out of the reader's scope, where its own `close()` hides the C function.
private func closeDescriptor(_ descriptor: Int32) {
    _ = close(descriptor)
}
