import CourierHTTP
import Foundation
import NIOConcurrencyHelpers
import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A `file:` URL's contents as a response source, streamed: one read of at most ``partSize`` bytes at a time on a
/// private queue, the next only after the engine handled the previous part and never while it has the source
/// paused — a large file is never read whole, and a slow reader holds back the reading.
///
/// ``open(_:)`` opens and checks the file (on the stage executor: file system calls may block); the source owns the
/// descriptor from then on and closes it when it goes away.
final class FileResponseSource: ResponseSource, Sendable {
    static let partSize = 64 * 1024

    var origin: TransactionRecord.Origin { .local }

    private struct State {
        var consumer: (any ResponseSourceConsumer)?
        var paused = false
        var ended = false
        var reading = false
    }

    private let descriptor: Int32
    private let response: URLResponse
    private let state = NIOLockedValueBox(State())
    private let queue = DispatchQueue(label: "courier.file-source")

    private init(descriptor: Int32, response: URLResponse) {
        self.descriptor = descriptor
        self.response = response
    }

    deinit {
        close(descriptor)
    }

    /// Opens the file `url` names, as a source whose response is a `URLResponse` with the file's length and a MIME
    /// type guessed from its extension.
    ///
    /// - Throws: `fileDoesNotExist` (also for a path with a NUL byte, which no file has), `fileIsDirectory`,
    ///   `noPermissionsToReadFile`, or `cannotOpenFile` (another host than this machine, or not a regular file: a
    ///   FIFO or a device could block or never end).
    static func open(_ url: URL) throws(TransferError) -> FileResponseSource {
        if let host = url.host, !host.isEmpty, host.lowercased() != "localhost" {
            throw .unsupportedURL("the file URL \(url.textWithoutCredentials()) names another host (\(host))")
        }
        guard let pathBytes = fileSystemPath(of: url) else {
            throw .fileDoesNotExist(
                "the file URL \(url.textWithoutCredentials()) names a path with a NUL byte or a broken escape")
        }
        let path = String(decoding: pathBytes, as: UTF8.self)
        let cPath = pathBytes.map { CChar(bitPattern: $0) } + [0]
        let (descriptor, status) = try cPath.withUnsafeBufferPointer { pointer throws(TransferError) in
            try RegularFileOpening.open(pointer.baseAddress!, file: "the file \(path)") {
                .urlError(.fileIsDirectory, "\(path) is a directory")
            }
        }
        let response = URLResponse(
            url: url, mimeType: FileMIMEType.forExtension(url.pathExtension),
            expectedContentLength: Int(status.st_size), textEncodingName: nil)
        return FileResponseSource(descriptor: descriptor, response: response)
    }

    /// The file system path `url` names, byte for byte: its percent-encoded path decoded, with a trailing slash
    /// kept, as in Darwin's file system representation (`URL.path` drops it, and `file:///etc/hosts/` then read
    /// the file where Darwin fails: the slash makes it a directory path). `nil` when the path holds a NUL byte (cut
    /// there, as a C string, it would name another file) or a broken escape.
    private static func fileSystemPath(of url: URL) -> [UInt8]? {
        guard let path = PercentDecoding.decode(url.absoluteURL.path(percentEncoded: true)), !path.contains(0) else {
            return nil
        }
        return path
    }

    func start(_ consumer: any ResponseSourceConsumer) {
        state.withLockedValue { $0.consumer = consumer }
        consumer.sourceDidReceive(response: response)
        readNext()
    }

    func pause() {
        state.withLockedValue { $0.paused = true }
    }

    func resume() {
        state.withLockedValue { $0.paused = false }
        readNext()
    }

    func cancel() {
        state.withLockedValue { state in
            state.ended = true
            state.consumer = nil
        }
    }

    func drain(then completion: @escaping @Sendable () -> Void) {
        cancel()
        completion()
    }

    /// Starts the next read unless one is running, the source is paused, or it ended.
    private func readNext() {
        let starts = state.withLockedValue { state in
            guard !state.reading, !state.paused, !state.ended, state.consumer != nil else { return false }
            state.reading = true
            return true
        }
        guard starts else { return }
        queue.async { [self] in readPart() }
    }

    private func readPart() {
        let outcome = FileChunkReader.chunk(of: descriptor, maxLength: Self.partSize)
        var failure: Int32 = 0
        var buffer: ByteBuffer?
        switch outcome {
        case .bytes(let bytes): buffer = bytes
        case .end: break
        case .failed(let code): failure = code
        }
        let consumer = state.withLockedValue { state -> (any ResponseSourceConsumer)? in
            state.reading = false
            guard !state.ended, let consumer = state.consumer else { return nil }
            if failure != 0 || buffer == nil {
                state.ended = true
                state.consumer = nil
            }
            return consumer
        }
        guard let consumer else { return }
        if failure != 0 {
            consumer.sourceDidFail(.cannotOpenFile("reading the file failed: \(String(cString: strerror(failure)))"))
        } else if let buffer {
            consumer.sourceDidReceive(part: buffer)
            consumer.sourceAfterEventsHandled { [self] in readNext() }
        } else {
            consumer.sourceDidFinish()
        }
    }
}
