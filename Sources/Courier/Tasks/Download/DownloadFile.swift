import CourierHTTP
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The file a download streams into. Every operation runs in order on the file's own serial queue, never on an
/// event loop; results come back through completion handlers.
final class DownloadFile: @unchecked Sendable {
    /// Darwin's temporary download files are named like this too.
    static func makeName() -> String {
        let unique = UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16)
        return "\(DownloadDirectory.fileNamePrefix)\(unique)\(DownloadDirectory.fileNameSuffix)"
    }

    /// The file's location.
    let url: URL
    private let queue: DispatchQueue
    // Touched only on `queue`.
    private var handle: FileHandle?
    private var failure: TransferError?
    /// The failure was a write (a full disk): the bytes written before it are still good for resume data.
    private var failedWriting = false
    /// The file was created or opened by this object, so it is ours to delete.
    private var opened = false

    /// A new, empty file named `name` in `directory` (created on the queue; failures reach the next operation).
    /// The folder is created or checked to be private first (see ``DownloadDirectory``).
    ///
    /// `target` is the queue the file's own serial queue runs on (a global queue by default; tests pass one they can
    /// suspend).
    init(directory: URL, name: String = DownloadFile.makeName(), target: DispatchQueue? = nil) {
        self.url = directory.appendingPathComponent(name, isDirectory: false)
        self.queue = DispatchQueue(label: "courier.download.file", target: target)
        let url = self.url
        queue.async { [self] in
            do throws(TransferError) {
                try DownloadDirectory.prepare(directory)
                handle = try DownloadDirectory.createFile(at: url)
                opened = true
            } catch {
                failure = error
            }
        }
    }

    /// An existing partial file, cut to `length` bytes and positioned at its end (resuming). A symbolic link, a
    /// file that is not regular, or one owned by another user is refused.
    init(existing url: URL, keepingFirst length: Int64) {
        self.url = url
        self.queue = DispatchQueue(label: "courier.download.file")
        queue.async { [self] in
            do {
                let handle = try DownloadDirectory.openPartialFile(at: url)
                self.handle = handle
                opened = true
                let size = try handle.seekToEnd()
                let keep = UInt64(max(0, length))
                guard size >= keep else {
                    // Shorter than the resume data says (cut meanwhile): appending would put bytes at the wrong offset.
                    throw TransferError.cannotOpenFile(
                        "the partial download \(url.lastPathComponent) is shorter than its resume data says")
                }
                if size > keep {
                    // Bytes past the recorded count were never confirmed: drop them.
                    try handle.truncate(atOffset: keep)
                    try handle.seek(toOffset: keep)
                }
            } catch let error as TransferError {
                failure = error
            } catch {
                failure = .cannotOpenFile("cannot open the partial download \(url.lastPathComponent): \(error)")
            }
        }
    }

    /// Adopts a file that is already open for writing (the engine always creates or opens its files itself; tests
    /// hand in devices such as `/dev/full`, which the engine would refuse as a partial file).
    init(url: URL, handle: FileHandle) {
        self.url = url
        self.queue = DispatchQueue(label: "courier.download.file")
        queue.async { [self] in
            self.handle = handle
        }
    }

    /// Checks that the file was created or opened.
    func ready(_ completion: @escaping @Sendable (Result<Void, TransferError>) -> Void) {
        queue.async { [self] in
            completion(failure.map { .failure($0) } ?? .success(()))
        }
    }

    /// Appends `data`.
    func append(_ data: Data, _ completion: @escaping @Sendable (Result<Void, TransferError>) -> Void) {
        queue.async { [self] in
            if let failure { return completion(.failure(failure)) }
            guard let handle else { return completion(.failure(.cannotWriteToFile("the download file is closed"))) }
            do {
                try handle.write(contentsOf: data)
                completion(.success(()))
            } catch {
                let problem = TransferError.cannotWriteToFile("writing the download file failed: \(error)")
                failure = problem
                failedWriting = true
                completion(.failure(problem))
            }
        }
    }

    /// Closes the file, keeping it. A failed write does not fail it: the bytes confirmed before it are intact (the
    /// resume data counts only those, and a resume cuts anything after them).
    func close(_ completion: @escaping @Sendable (Result<Void, TransferError>) -> Void) {
        queue.async { [self] in
            do {
                try handle?.close()
                handle = nil
                DownloadDirectory.release(url)
                completion(failure.map { failedWriting ? .success(()) : .failure($0) } ?? .success(()))
            } catch {
                completion(.failure(.cannotWriteToFile("closing the download file failed: \(error)")))
            }
        }
    }

    /// Closes the finished file and hands it over under a new name in the same folder (an atomic rename), then
    /// gives up the claim on the old name. The resume data that named the old file can then never reach the
    /// delivered one: a second resume of it finds no partial file (`cannotOpenFile`) instead of appending to a file
    /// that now belongs to the app.
    func closeAndHandOver(_ completion: @escaping @Sendable (Result<URL, TransferError>) -> Void) {
        queue.async { [self] in
            defer { DownloadDirectory.release(url) }
            do {
                try handle?.close()
                handle = nil
            } catch {
                return completion(.failure(.cannotWriteToFile("closing the download file failed: \(error)")))
            }
            if let failure { return completion(.failure(failure)) }
            let delivered = url.deletingLastPathComponent().appendingPathComponent(Self.makeName(), isDirectory: false)
            guard rename(url.path, delivered.path) == 0 else {
                let error = String(cString: strerror(errno))
                return completion(.failure(.cannotWriteToFile("cannot hand over the download file: \(error)")))
            }
            completion(.success(delivered))
        }
    }

    /// Closes and deletes the file.
    func remove(_ completion: (@Sendable () -> Void)? = nil) {
        queue.async { [self] in
            try? handle?.close()
            handle = nil
            // Only a file this task created or opened: never one that failed to open (it may be someone else's). The
            // name is unlinked, never removed recursively: a folder put in its place meanwhile is left alone.
            if opened { unlink(url.path) }
            DownloadDirectory.release(url)
            completion?()
        }
    }
}
