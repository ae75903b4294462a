import CourierHTTP
import CourierTransport
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A request body read from `InputStream`s: the request's own `httpBodyStream` for the first pass, then, each
/// time the body must be sent again (a retry, a 307/308 redirect), a new stream from the delegate's
/// `needNewBodyStream`. Streamed uploads ask the delegate from the first pass on.
final class InputStreamBodySource: TransportBodySource {
    private let firstStream: NIOLockedValueBox<InputStreamBox?>
    private let task: URLSessionTask

    init(initialStream: InputStream?, task: URLSessionTask) {
        self.firstStream = NIOLockedValueBox(initialStream.map(InputStreamBox.init))
        self.task = task
    }

    func makeReader() async throws -> any TransportBodyReader {
        let initial = firstStream.withLockedValue { box in
            defer { box = nil }
            return box
        }
        if let initial {
            return try await InputStreamBodyReader.open(initial)
        }
        guard let stream = await Self.askDelegate(task: task) else {
            throw TransferError.requestBodyStreamExhausted("no body stream was provided for the request")
        }
        return try await InputStreamBodyReader.open(stream)
    }

    /// Asks `needNewBodyStream` on the delegate queue (task delegate first, then the session's).
    private static func askDelegate(task: URLSessionTask) async -> InputStreamBox? {
        guard let delegate = task.resolvedDelegate(URLSessionTaskDelegate.self) else { return nil }
        let session = task.session
        return await withCheckedContinuation { continuation in
            session.dispatcher.async {
                let answered = CompletionOnce()
                delegate.urlSession(session, task: task) { stream in
                    guard answered.claim() else { return }
                    continuation.resume(returning: stream.map(InputStreamBox.init))
                }
            }
        }
    }
}

/// Reads one `InputStream` on NIO's thread pool (stream reads block).
private struct InputStreamBodyReader: TransportBodyReader {
    let box: InputStreamBox

    static func open(_ box: InputStreamBox) async throws -> InputStreamBodyReader {
        try await NIOThreadPool.singleton.runIfActive {
            if box.stream.streamStatus == .notOpen { box.stream.open() }
            if box.stream.streamStatus == .error {
                throw TransferError.requestBodyStreamExhausted(
                    "the body stream could not be opened: \(box.stream.streamError.map { "\($0)" } ?? "unknown error")"
                )
            }
        }
        return InputStreamBodyReader(box: box)
    }

    func read(maxLength: Int) async throws -> ByteBuffer? {
        let box = self.box
        return try await NIOThreadPool.singleton.runIfActive {
            var bytes = [UInt8](repeating: 0, count: maxLength)
            let count = box.stream.read(&bytes, maxLength: maxLength)
            if count < 0 {
                throw TransferError.requestBodyStreamExhausted(
                    "reading the body stream failed: \(box.stream.streamError.map { "\($0)" } ?? "unknown error")"
                )
            }
            if count == 0 { return nil }
            return ByteBuffer(bytes: bytes[0..<count])
        }
    }

    func close() {
        box.stream.close()
    }
}
