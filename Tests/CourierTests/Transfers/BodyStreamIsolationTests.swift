import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

/// An app's body stream is user code: its reads may block for as long as the app takes to produce the body (a bound
/// pair it writes to as data comes), and its `close()` must not run on Courier's event loops.
@Suite("Body streams are the app's code")
struct BodyStreamIsolationTests {
    /// Opens once per `open(_:)`; counts the reads that wait for it.
    final class Gate: @unchecked Sendable {
        let semaphore = DispatchSemaphore(value: 0)
        let entered = NIOLockedValueBox(0)

        func open(_ count: Int) {
            for _ in 0..<count { semaphore.signal() }
        }
    }

    /// A stream whose first read waits for its gate, then ends the body; it records where it was closed.
    final class GatedStream: InputStream {
        let gate: Gate
        let closedOnEventLoop = NIOLockedValueBox<Bool?>(nil)

        init(gate: Gate) {
            self.gate = gate
            super.init(data: Data())
        }

        override var streamStatus: Stream.Status { .open }
        override var streamError: (any Error)? { nil }
        override func open() {}
        override var hasBytesAvailable: Bool { true }
        override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int {
            gate.entered.withLockedValue { $0 += 1 }
            gate.semaphore.wait()
            return 0
        }
        override func close() {
            let onEventLoop = MultiThreadedEventLoopGroup.currentEventLoop != nil
            closedOnEventLoop.withLockedValue { $0 = onEventLoop }
        }
    }

    /// As many streamed uploads as NIO's shared blocking pool has threads, each waiting for its app to write, used to
    /// take every thread of that pool: a file upload (and any new TLS context) then waited for them.
    @Test func streamsWaitingForTheAppDoNotHoldUpAFileUpload() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (file, digest) = try writePatternFile(length: 100_000, in: directory)
        try await withServer { server in
            server.route("/wait", method: "POST", response: .status(201))
            server.route("/file", method: "PUT", response: .status(204))
            let gate = Gate()
            let session = makeSession()
            defer { session.invalidateAndCancel() }
            let count = NIOSingletons.blockingPoolThreadCountSuggestion
            var waiting: [URLSessionDataTask] = []
            for _ in 0..<count {
                var request = URLRequest(url: server.url("/wait"))
                request.httpMethod = "POST"
                request.httpBodyStream = GatedStream(gate: gate)
                let task = session.dataTask(with: request)
                task.resume()
                waiting.append(task)
            }
            // Every stream is inside its read (bounded: other tests may hold pool threads too).
            for _ in 0..<500 where gate.entered.withLockedValue({ $0 }) < count {
                try await Task.sleep(for: .milliseconds(20))
            }
            var request = URLRequest(url: server.url("/file"))
            request.httpMethod = "PUT"
            // Before the fix the upload waited for the gated streams until this timeout; 10 s was once too short for
            // the fixed code in a full run on the loaded 2-core machine.
            request.timeoutInterval = 30
            let outcome: DataOutcome = await withCheckedContinuation { continuation in
                session.uploadTask(with: request, fromFile: file) { data, response, error in
                    continuation.resume(
                        returning: DataOutcome(data: data, response: response, error: error, onDelegateQueue: true))
                }.resume()
            }
            gate.open(count)
            #expect(outcome.error == nil)
            #expect(outcome.http?.statusCode == 204)
            #expect(server.requests(path: "/file").first?.bodySHA256 == digest)
            for _ in 0..<500 where waiting.contains(where: { $0.state != .completed }) {
                try await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    @Test func theAppsStreamIsClosedOffTheEventLoops() async throws {
        try await withServer { server in
            server.route("/s", method: "POST", response: .status(201))
            let gate = Gate()
            gate.open(1)
            let stream = GatedStream(gate: gate)
            var request = URLRequest(url: server.url("/s"))
            request.httpMethod = "POST"
            request.httpBodyStream = stream
            let session = makeSession()
            defer { session.invalidateAndCancel() }
            let outcome = await session.runDataTask(request)
            #expect(outcome.error == nil)
            for _ in 0..<250 where stream.closedOnEventLoop.withLockedValue({ $0 }) == nil {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(stream.closedOnEventLoop.withLockedValue { $0 } == false)
        }
    }
}
