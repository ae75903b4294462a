import Foundation

#if canImport(Courier)
    import Courier
#elseif canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An input stream over a file that was already removed from its folder: the open descriptor keeps the bytes until
/// the stream closes or goes away, so a large multipart body streamed from a temporary file leaves nothing behind,
/// whatever happens to the request.
final class UnlinkedFileInputStream: InputStream {
    private let handle: FileHandle
    private let lock = NSLock()
    private var status = Stream.Status.notOpen
    private var failure: (any Error)?
    private var atEnd = false

    /// Takes over `handle`, positioned at the start of the bytes to read.
    init(handle: FileHandle) {
        self.handle = handle
        super.init(data: Data())
    }

    override func open() {
        lock.withLock { if status == .notOpen { status = .open } }
    }

    override func close() {
        lock.withLock {
            guard status != .closed else { return }
            status = .closed
            try? handle.close()
        }
    }

    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int {
        lock.withLock {
            guard status == .open || status == .atEnd, len > 0 else { return status == .atEnd ? 0 : -1 }
            do {
                guard let chunk = try handle.read(upToCount: len), !chunk.isEmpty else {
                    status = .atEnd
                    return 0
                }
                chunk.copyBytes(to: buffer, count: chunk.count)
                return chunk.count
            } catch {
                failure = error
                status = .error
                return -1
            }
        }
    }

    override func getBuffer(
        _ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length len: UnsafeMutablePointer<Int>
    ) -> Bool { false }

    override var hasBytesAvailable: Bool { lock.withLock { status == .open } }
    override var streamStatus: Stream.Status { lock.withLock { status } }
    override var streamError: (any Error)? { lock.withLock { failure } }

    deinit {
        try? handle.close()
    }
}
