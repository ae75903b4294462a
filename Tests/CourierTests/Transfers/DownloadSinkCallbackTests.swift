import CourierHTTP
import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import Courier

/// Where a download sink reports what its file's queue did: through the `callbacksOn` it was given, in the order the
/// queue reported it, the hand-over of the file last. (Run on the file's own thread, the engine jobs these
/// callbacks start held the file's writes back while the connection read on.)
@Suite("DownloadSink callbacks")
struct DownloadSinkCallbackTests {
    /// Keeps the callbacks it is handed instead of running them, until the test runs them.
    final class HeldCallbacks: Sendable {
        private let held = NIOLockedValueBox<[@Sendable () -> Void]>([])

        var count: Int { held.withLockedValue { $0.count } }

        func hold(_ callback: @escaping @Sendable () -> Void) {
            held.withLockedValue { $0.append(callback) }
        }

        /// Runs the held callbacks in the order they came.
        func runAll() {
            let callbacks = held.withLockedValue { held in
                defer { held.removeAll() }
                return held
            }
            for callback in callbacks { callback() }
        }

        /// Waits (up to a minute) until `count` callbacks are held.
        func wait(for count: Int) async throws {
            let deadline = ContinuousClock.now + .seconds(60)
            while self.count < count {
                guard ContinuousClock.now < deadline else { throw CancellationError() }
                try await Task.sleep(for: .milliseconds(5))
            }
        }
    }

    /// What the sink reported, in order.
    final class Reports: Sendable {
        let events = NIOLockedValueBox<[String]>([])
        func add(_ event: String) { events.withLockedValue { $0.append(event) } }
    }

    private func makeSink(in directory: URL, callbacks: HeldCallbacks, reports: Reports) -> DownloadSink {
        DownloadSink(
            directory: directory,
            callbacksOn: { callbacks.hold($0) },
            onBackpressure: { reports.add("backpressure") },
            onWrite: { count, total in reports.add("wrote \(count) of \(total)") },
            onFailure: { error in reports.add("failed \(error)") })
    }

    @Test func writesAndTheHandOverAreReportedThroughTheCallbacksInOrder() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let callbacks = HeldCallbacks()
        let reports = Reports()
        let sink = makeSink(in: directory, callbacks: callbacks, reports: reports)
        sink.open()
        sink.append(Data(count: 100))
        sink.append(Data(count: 20))
        sink.append(Data(count: 3))
        sink.finish { result in reports.add(result.map { _ in "handed over" }.get(or: "failed")) }

        try await callbacks.wait(for: 4)
        // Nothing ran on the file's queue: all of it waits for the callbacks' runner.
        #expect(reports.events.withLockedValue { $0 } == [])
        callbacks.runAll()
        #expect(
            reports.events.withLockedValue { $0 } == [
                "wrote 100 of 100", "wrote 20 of 120", "wrote 3 of 123", "handed over",
            ])
    }

    @Test func aDownloadKeptForResumeIsReportedAfterItsWrites() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let callbacks = HeldCallbacks()
        let reports = Reports()
        let sink = makeSink(in: directory, callbacks: callbacks, reports: reports)
        sink.open()
        sink.append(Data(count: 7))
        sink.keepForResume { result in reports.add((try? result.get()).map { "kept \($0.length)" } ?? "failed") }

        try await callbacks.wait(for: 2)
        #expect(reports.events.withLockedValue { $0 } == [])
        callbacks.runAll()
        #expect(reports.events.withLockedValue { $0 } == ["wrote 7 of 7", "kept 7"])
    }

    @Test func aDiscardIsReportedThroughTheCallbacksOnceTheFileIsGone() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let callbacks = HeldCallbacks()
        let reports = Reports()
        let sink = makeSink(in: directory, callbacks: callbacks, reports: reports)
        sink.open()
        sink.append(Data(count: 5))
        sink.discard { reports.add("discarded") }

        try await callbacks.wait(for: 2)
        #expect(reports.events.withLockedValue { $0 } == [])
        #expect(filesIn(directory).isEmpty)
        callbacks.runAll()
        #expect(reports.events.withLockedValue { $0 } == ["wrote 5 of 5", "discarded"])
    }
}

extension Result {
    /// The success value, or `fallback` for a failure.
    fileprivate func get(or fallback: Success) -> Success {
        (try? get()) ?? fallback
    }
}
