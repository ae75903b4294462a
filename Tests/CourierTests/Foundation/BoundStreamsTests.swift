import CourierMockServer
import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import Courier

/// `Stream.getBoundStreams(withBufferSize:inputStream:outputStream:)`, which swift-corelibs-foundation lacks and
/// Darwin's streamed uploads use.
@Suite("Bound stream pairs")
struct BoundStreamsTests {
    private func pair(_ size: Int) throws -> (InputStream, OutputStream) {
        var input: InputStream?
        var output: OutputStream?
        Stream.getBoundStreams(withBufferSize: size, inputStream: &input, outputStream: &output)
        return (try #require(input), try #require(output))
    }

    /// Runs `work` on a thread of its own (it blocks) and waits for its result without holding a test thread.
    private func onThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: work()) }
        }
    }

    @Test(arguments: [(7, [3, 5, 6, 7, 1]), (16, [16, 15, 2, 9]), (1, [1, 1, 1])])
    func theRingKeepsTheOrderAcrossItsEnd(capacity: Int, writes: [Int]) {
        var ring = ByteRing(capacity: capacity)
        var written: [UInt8] = []
        var read: [UInt8] = []
        var next: UInt8 = 0
        for size in writes {
            let bytes = (0..<size).map { _ in
                next &+= 1
                return next
            }
            let space = ring.space
            let taken = bytes.withUnsafeBytes { ring.write($0) }
            #expect(taken == min(size, space))
            written += bytes.prefix(taken)
            // Read a little less than half each time, so the next write wraps round.
            var out = [UInt8](repeating: 0, count: max(1, ring.count / 2))
            let got = out.withUnsafeMutableBytes { ring.read(into: $0) }
            read += out.prefix(got)
        }
        var rest = [UInt8](repeating: 0, count: capacity)
        let got = rest.withUnsafeMutableBytes { ring.read(into: $0) }
        read += rest.prefix(got)
        #expect(ring.isEmpty)
        #expect(read == written)
    }

    @Test func bytesWrittenAreReadInOrderThroughASmallBuffer() async throws {
        let (input, output) = try pair(4096)
        let body = MockBody.patternBytes(offset: 0, count: 1_000_003)
        input.open()
        output.open()
        let writer = UncheckedBox(output)
        let writes = Task.detached {
            await onThread {
                var offset = 0
                while offset < body.count {
                    let count = body[offset...].withUnsafeBytes {
                        writer.value.write($0.bindMemory(to: UInt8.self).baseAddress!, maxLength: min(10_000, $0.count))
                    }
                    if count <= 0 { return false }
                    offset += count
                }
                writer.value.close()
                return true
            }
        }
        let reader = UncheckedBox(input)
        let received = await onThread { readToTheEnd(reader.value, chunkSize: 3000) }
        #expect(await writes.value)
        #expect(received.count == body.count)
        #expect(received == body)
        #expect(input.streamStatus == .atEnd)
        var one = [UInt8](repeating: 0, count: 1)
        #expect(input.read(&one, maxLength: 1) == 0, "at the end, reads keep returning 0")
    }

    @Test func aWriteTakesWhatFitsAndAReadWaitsForTheWriter() async throws {
        let (input, output) = try pair(10)
        var scratch = [UInt8](repeating: 0, count: 32)
        #expect(input.read(&scratch, maxLength: 32) == -1, "not open yet")
        input.open()
        output.open()
        #expect(!input.hasBytesAvailable)
        #expect(output.hasSpaceAvailable)
        let bytes = [UInt8](repeating: 7, count: 25)
        #expect(output.write(bytes, maxLength: 25) == 10)
        #expect(!output.hasSpaceAvailable)
        #expect(input.hasBytesAvailable)
        #expect(input.read(&scratch, maxLength: 32) == 10)
        #expect(scratch.prefix(10).allSatisfy { $0 == 7 })
        // Nothing buffered: the read waits until the writer closes, then finds the end.
        let reader = UncheckedBox(input)
        let returned = NIOLockedValueBox(false)
        let ended = Task.detached {
            await onThread { () -> Int in
                var one = [UInt8](repeating: 0, count: 1)
                defer { returned.withLockedValue { $0 = true } }
                return reader.value.read(&one, maxLength: 1)
            }
        }
        try await Task.sleep(for: .milliseconds(100))
        #expect(!returned.withLockedValue { $0 }, "the read waits while the writer is open")
        output.close()
        #expect(await ended.value == 0)
        #expect(input.streamStatus == .atEnd)
    }

    @Test func closingTheInputWakesAWaitingReadAndAWaitingWrite() async throws {
        let (input, output) = try pair(4)
        input.open()
        output.open()
        let reader = UncheckedBox(input)
        let read = Task.detached {
            await onThread { () -> Int in
                var one = [UInt8](repeating: 0, count: 1)
                return reader.value.read(&one, maxLength: 1)
            }
        }
        try await Task.sleep(for: .milliseconds(50))
        #expect(output.write([1, 2, 3, 4], maxLength: 4) == 4)
        #expect(await read.value == 1)
        // The buffer holds three bytes and room for one: the second write waits for room.
        let writer = UncheckedBox(output)
        let firstWritten = NIOLockedValueBox(false)
        let write = Task.detached {
            await onThread { () -> Int in
                // The first write takes the one free byte; the second waits for room.
                guard writer.value.write([5, 6], maxLength: 2) == 1 else { return -2 }
                firstWritten.withLockedValue { $0 = true }
                return writer.value.write([6], maxLength: 1)
            }
        }
        // The close must come after the first write (a loaded machine took longer than a fixed 50 ms); whether the
        // second write is already waiting or starts after the close, it fails.
        try await waitUntil(timeout: .seconds(20)) { firstWritten.withLockedValue { $0 } }
        try await Task.sleep(for: .milliseconds(50))
        input.close()
        #expect(await write.value == -1)
        #expect((output.streamError as? POSIXError)?.code == .EPIPE)
    }

    /// A reader scheduled in a run loop, reading a little at a time: every byte, then `.endEncountered` once.
    @Test(.timeLimit(.minutes(1)))
    func aReaderScheduledInARunLoopGetsEveryByteAndTheEndOnce() async throws {
        let (input, output) = try pair(512)
        let body = MockBody.patternBytes(offset: 0, count: 20_000)
        let reader = RunLoopReader()
        let stream = UncheckedBox(input)
        let finished = Task.detached {
            await onThread { () -> Bool in
                stream.value.delegate = reader
                stream.value.schedule(in: .current, forMode: .default)
                stream.value.open()
                let deadline = Date().addingTimeInterval(20)
                while !reader.isFinished, Date() < deadline {
                    _ = RunLoop.current.run(mode: .default, before: Date().addingTimeInterval(0.05))
                }
                // Late events would come now.
                _ = RunLoop.current.run(mode: .default, before: Date().addingTimeInterval(0.1))
                return reader.isFinished
            }
        }
        output.open()
        var offset = 0
        while offset < body.count {
            let count = body[offset...].withUnsafeBytes {
                output.write($0.bindMemory(to: UInt8.self).baseAddress!, maxLength: min(300, $0.count))
            }
            try #require(count > 0)
            offset += count
        }
        output.close()
        #expect(await finished.value)
        #expect(reader.received == body)
        #expect(reader.events.filter { $0 == .endEncountered }.count == 1)
        #expect(reader.events.last == .endEncountered)
        #expect(input.streamStatus == .atEnd)
    }

    @Test func writingAfterTheReaderClosedFailsWithEPIPE() throws {
        let (input, output) = try pair(4)
        input.open()
        output.open()
        #expect(output.write([1, 2, 3, 4], maxLength: 4) == 4)
        input.close()
        #expect(output.hasSpaceAvailable, "a write returns at once (and fails)")
        #expect(output.write([5], maxLength: 1) == -1)
        #expect(output.streamStatus == .error)
        #expect((output.streamError as? POSIXError)?.code == .EPIPE)
    }

    @Test func aReleasedOutputStreamEndsTheInput() throws {
        var input: InputStream?
        Stream.getBoundStreams(withBufferSize: 16, inputStream: &input, outputStream: nil)
        let stream = try #require(input)
        stream.open()
        var one = [UInt8](repeating: 0, count: 1)
        #expect(stream.read(&one, maxLength: 1) == 0)
        #expect(stream.streamStatus == .atEnd)
    }

    /// Apple's pattern: the output stream scheduled in a run loop, its delegate writing on `.hasSpaceAvailable`, in
    /// pieces smaller than the buffer (so the events must keep coming while there is room, not only after it filled).
    @Test(.timeLimit(.minutes(1)))
    func aDelegateScheduledInARunLoopWritesOnSpaceAvailable() async throws {
        let (input, output) = try pair(1024)
        let body = MockBody.patternBytes(offset: 0, count: 50_000)
        let writer = RunLoopWriter(body: body)
        let stream = UncheckedBox(output)
        Thread.detachNewThread {
            stream.value.delegate = writer
            stream.value.schedule(in: .current, forMode: .default)
            stream.value.open()
            let deadline = Date().addingTimeInterval(20)
            while !writer.isFinished, Date() < deadline {
                _ = RunLoop.current.run(mode: .default, before: Date().addingTimeInterval(0.05))
            }
            // A stalled writer ends the reader's wait (the test then fails on the bytes).
            stream.value.close()
        }
        input.open()
        let reader = UncheckedBox(input)
        let received = await onThread { readToTheEnd(reader.value, chunkSize: 700) }
        #expect(received == body)
        #expect(writer.events.contains(.openCompleted))
        #expect(writer.events.filter { $0 == .hasSpaceAvailable }.count > 1, "the writer was woken as space came")
    }

    /// End to end: a streamed upload whose body the app writes, as it has it, to the output stream of a bound pair
    /// whose input stream answered `needNewBodyStream`.
    @Test(arguments: WireProtocol.allCases)
    func aStreamedUploadReadsTheBoundInputStream(over wire: WireProtocol) async throws {
        let body = MockBody.patternBytes(offset: 0, count: 300_000)
        try await withServer(wire) { server in
            server.route("/up", method: "PUT", response: .status(201))
            let delegate = BoundStreamUploadDelegate(body: body)
            let session = makeSession(delegate: delegate)
            var request = URLRequest(url: server.url("/up"))
            request.httpMethod = "PUT"
            session.uploadTask(withStreamedRequest: request).resume()
            await delegate.recorder.waitForCompletions()
            #expect(delegate.recorder.events.last == .complete(nil))
            let recorded = try #require(server.requests(path: "/up").first)
            #expect(recorded.bodyLength == body.count)
            #expect(recorded.bodySHA256 == sha256Hex(body))
        }
    }
}

extension BoundStreamsTests {
    /// An upload from a bound stream, cancelled while the app's writer is idle (the body stream's read waits for it):
    /// the input stream is closed at once, so the writer's next write fails instead of the upload's reader waiting.
    @Test func cancellingAnUploadClosesTheWaitingBoundStream() async throws {
        try await withServer(.http1) { server in
            server.route("/up", method: "PUT", response: .status(201))
            var input: InputStream?
            var output: OutputStream?
            Stream.getBoundStreams(withBufferSize: 1024, inputStream: &input, outputStream: &output)
            let writer = try #require(output)
            writer.open()
            #expect(writer.write([UInt8](repeating: 1, count: 100), maxLength: 100) == 100)
            let reader = try #require(input)
            var request = URLRequest(url: server.url("/up"))
            request.httpMethod = "PUT"
            request.httpBodyStream = reader
            let task = makeSession().dataTask(with: request)
            task.resume()
            // The 100 bytes went; the next read waits for the writer.
            for _ in 0..<200 where task.countOfBytesSent < 100 {
                try await Task.sleep(for: .milliseconds(10))
            }
            try #require(task.countOfBytesSent == 100)
            task.cancel()
            // Nothing more is written: only the cancel can end the waiting read.
            for _ in 0..<200 where reader.streamStatus != .closed {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(reader.streamStatus == .closed)
            #expect(writer.write([2], maxLength: 1) == -1)
            #expect((writer.streamError as? POSIXError)?.code == .EPIPE)
        }
    }
}

/// Everything `stream` gives until its end (or a failed read), `chunkSize` bytes a read at most. Blocking.
private func readToTheEnd(_ stream: InputStream, chunkSize: Int) -> Data {
    var received = Data()
    var chunk = [UInt8](repeating: 0, count: chunkSize)
    while true {
        let count = stream.read(&chunk, maxLength: chunk.count)
        if count <= 0 { return received }
        received.append(contentsOf: chunk.prefix(count))
    }
}

/// A value handed to another thread where the test knows only one uses it at a time.
private struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// Writes `body` to the stream it delegates for, a piece on each `.hasSpaceAvailable`, and closes it at the end.
private final class RunLoopWriter: NSObject, StreamDelegate, @unchecked Sendable {
    private let body: Data
    private let state = NIOLockedValueBox((offset: 0, finished: false, events: [Stream.Event]()))

    init(body: Data) { self.body = body }

    var isFinished: Bool { state.withLockedValue { $0.finished } }
    var events: [Stream.Event] { state.withLockedValue { $0.events } }

    func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        state.withLockedValue { $0.events.append(eventCode) }
        guard eventCode == .hasSpaceAvailable, let output = aStream as? OutputStream else { return }
        let offset = state.withLockedValue { $0.offset }
        guard offset < body.count else { return }
        let count = body[offset...].withUnsafeBytes {
            output.write($0.bindMemory(to: UInt8.self).baseAddress!, maxLength: min(100, $0.count))
        }
        let done: Bool = state.withLockedValue {
            $0.offset += max(0, count)
            $0.finished = $0.offset >= body.count || count < 0
            return $0.finished
        }
        if done { output.close() }
    }
}

/// Reads its input stream 100 bytes at a time on each `.hasBytesAvailable`, and records the events.
private final class RunLoopReader: NSObject, StreamDelegate, @unchecked Sendable {
    private let state = NIOLockedValueBox((received: Data(), finished: false, events: [Stream.Event]()))

    var isFinished: Bool { state.withLockedValue { $0.finished } }
    var events: [Stream.Event] { state.withLockedValue { $0.events } }
    var received: Data { state.withLockedValue { $0.received } }

    func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        state.withLockedValue { $0.events.append(eventCode) }
        switch eventCode {
        case .hasBytesAvailable:
            guard let input = aStream as? InputStream else { return }
            var chunk = [UInt8](repeating: 0, count: 100)
            let count = input.read(&chunk, maxLength: chunk.count)
            if count > 0 { state.withLockedValue { $0.received.append(contentsOf: chunk.prefix(count)) } }
        case .endEncountered, .errorOccurred:
            state.withLockedValue { $0.finished = true }
        default:
            break
        }
    }
}

/// Answers `needNewBodyStream` with a bound pair's input stream and writes the body to its output stream from a
/// thread of its own.
private final class BoundStreamUploadDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    let body: Data
    let recorder = RecordingDelegate()

    init(body: Data) { self.body = body }

    func urlSession(
        _ session: URLSession, task: URLSessionTask,
        needNewBodyStream completionHandler: @escaping @Sendable (InputStream?) -> Void
    ) {
        var input: InputStream?
        var output: OutputStream?
        Stream.getBoundStreams(withBufferSize: 8192, inputStream: &input, outputStream: &output)
        let writer = UncheckedBox(output!)
        let body = self.body
        Thread.detachNewThread {
            writer.value.open()
            var offset = 0
            while offset < body.count {
                let count = body[offset...].withUnsafeBytes {
                    writer.value.write($0.bindMemory(to: UInt8.self).baseAddress!, maxLength: min(5000, $0.count))
                }
                guard count > 0 else { break }
                offset += count
            }
            writer.value.close()
        }
        completionHandler(input)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        recorder.urlSession(session, task: task, didCompleteWithError: error)
    }
}
