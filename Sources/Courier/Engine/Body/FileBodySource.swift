import CourierHTTP
import CourierTransport
import Foundation
import NIOCore
import NIOPosix

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
        let url = self.url
        let handle = try await NIOThreadPool.singleton.runIfActive { () throws -> FileHandleBox in
            do {
                return FileHandleBox(handle: try FileHandle(forReadingFrom: url))
            } catch {
                throw TransferError.cannotOpenFile("cannot open the file to upload: \(url.path)")
            }
        }
        return FileBodyReader(box: handle)
    }
}

/// A `FileHandle` that is only used from one reader at a time.
final class FileHandleBox: @unchecked Sendable {
    let handle: FileHandle
    init(handle: FileHandle) { self.handle = handle }
}

/// Reads the chunks of one ``FileBodySource`` pass.
private struct FileBodyReader: TransportBodyReader {
    let box: FileHandleBox

    func read(maxLength: Int) async throws -> ByteBuffer? {
        let box = self.box
        return try await NIOThreadPool.singleton.runIfActive {
            let data: Data?
            do {
                data = try box.handle.read(upToCount: maxLength)
            } catch {
                throw TransferError.cannotOpenFile("reading the file to upload failed: \(error)")
            }
            guard let data, !data.isEmpty else { return nil }
            return ByteBuffer(bytes: data)
        }
    }

    func close() {
        try? box.handle.close()
    }
}
