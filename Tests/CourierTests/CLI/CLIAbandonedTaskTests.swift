import Courier
import CourierMockServer
import Foundation
import Testing

@testable import courier

/// An interruption that comes while an attempt is being started: the attempt's task must not start after the
/// interruption looked for it, or it makes the run's folder again after the folder was removed.
@Suite("courier: a task abandoned before it started")
struct CLIAbandonedTaskTests {
    @Test func aTaskAbandonedBeforeItStartedNeverStarts() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // The run's folder, already removed by the interruption's cleanup.
        let folder = directory.appendingPathComponent(".courier-removed")
        try await withServer(.http1) { server in
            server.route("/file", response: MockResponse(body: .pattern(length: 10_000)))
            let settings = TransferSettings()
            let delegate = SessionDelegate(trust: TrustPolicy(), verboseLog: nil)
            let pool = SessionPool(settings: settings, delegate: delegate, cookies: nil)
            defer { pool.finish() }
            let session = pool.session(downloadFolder: folder, transfer: 0)
            let task = session.downloadTask(with: server.url("/file"))
            let handler = TaskHandler(
                settings: settings, mode: .download(place: { _, _ in nil }), board: ProgressBoard(enabled: false),
                line: 0, origin: server.url("/file"), verboseLog: nil, keep: { _ in .keep })
            delegate.register(handler, for: task)

            // The interruption found the handler before its task was given to it.
            handler.abandon()
            let outcome = await handler.run(task)

            #expect(outcome.error?.code == .cancelled)
            #expect(server.requests.isEmpty)
            #expect(!FileManager.default.fileExists(atPath: folder.path))
        }
    }
}
