import CourierStore
import Foundation
import Logging
import Testing

@testable import Courier
@testable import CourierDaemon

extension BackgroundSuites.BackgroundRecoveryTests {
    /// The daemon crashed after journaling a finished download and before moving its file to where the outcome
    /// says: the next daemon completes the move, and the app receives the file whole.
    @Test func aMoveCutShortByACrashIsCompletedByTheNextDaemon() async throws {
        let fixture = try BackgroundFixture()
        let location = BackgroundLocation(environment: fixture.environment)
        let identifier = "app.cutshort"
        let taskFolder = location.transferFolder(identifier, task: 1)
        try FileManager.default.createDirectory(
            at: taskFolder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        for folder in [location.dataFolder, location.sessionFolder(identifier), taskFolder] {
            chmod(folder.path, 0o700)
        }
        let bytes = MockBodyBytes.pattern(300_000)
        let staged = taskFolder.appendingPathComponent("CFNetworkDownload_staged.tmp")
        #expect(FileManager.default.createFile(atPath: staged.path, contents: bytes))
        let finished = location.sessionFolder(identifier).appendingPathComponent("finished-1.download")

        // What the crashed daemon journaled: the task completed, its file at `finished`, still at `staged`.
        let request = CodableRequest(URLRequest(url: URL(string: "http://127.0.0.1:9/file")!))
        let spec = BackgroundTaskSpec(
            task: 1, kind: .download, request: request,
            settings: BackgroundTransferSettings(timeoutIntervalForRequest: 60, timeoutIntervalForResource: 600))
        var record = TaskRecord(identifier: identifier, spec: spec, now: Date())
        let outcome = BackgroundOutcome(file: finished.path)
        record.state = .completed
        record.outcome = outcome
        record.finishedFrom = staged.path
        do {
            let journal = try BackgroundJournal(at: location.journal, logger: Logger(label: "test"))
            _ = try journal.nextTaskIdentifier(for: identifier)
            try journal.save(
                JournalTask(identifier: identifier, task: 1, finished: true, record: JSONEncoder().encode(record)),
                appending: JSONEncoder().encode(BackgroundEvent.Kind.completed(outcome)))
        }

        let recorder = BackgroundRecorder()
        let session = await fixture.session(identifier, delegate: recorder)
        await recorder.waitForCompletions(1)
        await Self.waitUntil { recorder.drainedCount == 1 }
        #expect(recorder.events == ["finished 1", "completed 1 0", "drained"], "\(fixture.daemonLog)")
        #expect(bytesAre(recorder.finished.first?.bytes ?? Data(), bytes))
        #expect(fixture.daemonLog.contains("moved after a crash"))
        session.invalidateAndCancel()
        await fixture.tearDown()
    }
}

/// Pattern bytes without a server.
private enum MockBodyBytes {
    static func pattern(_ count: Int) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) })
    }
}
