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
    }

    /// What the sink reported, in order.
    final class Reports: Sendable {
        let events = NIOLockedValueBox<[String]>([])
        func add(_ event: String) { events.withLockedValue { $0.append(event) } }
    }

    /// Opens a sink in a new folder, appends `parts` (bytes each), runs `end` on it, then waits for `expected`
    /// callbacks: none may have run on the file's queue. Runs them in order; returns the reports, and the folder's
    /// files when the last callback was held.
    private func reports(
        appending parts: [Int], expected: Int, end: (DownloadSink, Reports) -> Void
    ) async throws -> (reported: [String], files: [String]) {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let callbacks = HeldCallbacks()
        let reports = Reports()
        let sink = DownloadSink(
            directory: directory,
            callbacksOn: { callbacks.hold($0) },
            onBackpressure: { reports.add("backpressure") },
            onWrite: { count, total in reports.add("wrote \(count) of \(total)") },
            onFailure: { error in reports.add("failed \(error)") })
        sink.open()
        for part in parts { sink.append(Data(count: part)) }
        end(sink, reports)
        // Fewer than `expected` within the time limit: the file's queue reported less than expected.
        try await waitUntil(timeout: .seconds(60)) { callbacks.count >= expected }
        // Nothing ran on the file's queue: all of it waits for the callbacks' runner.
        #expect(reports.events.withLockedValue { $0 } == [])
        let files = filesIn(directory)
        callbacks.runAll()
        return (reports.events.withLockedValue { $0 }, files)
    }

    @Test func writesAndTheHandOverAreReportedThroughTheCallbacksInOrder() async throws {
        let (reported, _) = try await reports(appending: [100, 20, 3], expected: 4) { sink, reports in
            sink.finish { result in reports.add((try? result.get()) == nil ? "failed" : "handed over") }
        }
        #expect(reported == ["wrote 100 of 100", "wrote 20 of 120", "wrote 3 of 123", "handed over"])
    }

    @Test func aDownloadKeptForResumeIsReportedAfterItsWrites() async throws {
        let (reported, _) = try await reports(appending: [7], expected: 2) { sink, reports in
            sink.keepForResume { result in reports.add((try? result.get()).map { "kept \($0.length)" } ?? "failed") }
        }
        #expect(reported == ["wrote 7 of 7", "kept 7"])
    }

    @Test func aDiscardIsReportedThroughTheCallbacksOnceTheFileIsGone() async throws {
        let (reported, files) = try await reports(appending: [5], expected: 2) { sink, reports in
            sink.discard { reports.add("discarded") }
        }
        #expect(files.isEmpty)
        #expect(reported == ["wrote 5 of 5", "discarded"])
    }
}
