import CourierHTTP
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

@testable import Courier

extension BackgroundSuites {
    /// A disk that fills up mid-download, for real (a small tmpfs): the task fails with `cannotWriteToFile` and resume
    /// data for the bytes that reached the disk; once there is room, the resume data continues the download.
    @Suite("Downloads: a full disk", .enabled(if: SmallFileSystem.isAvailable), .serialized)
    struct FullDiskTests {
        @Test func aFullDiskGivesResumeDataThatContinuesOnceThereIsRoom() async throws {
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let disk = try SmallFileSystem(at: directory.appendingPathComponent("disk"), kilobytes: 1024)
            defer { disk.unmount() }
            try await withServer { server in
                server.serveResource("/file", body: .pattern(length: 3_000_000))
                let recorder = DownloadRecorder(copyDirectory: directory)
                let session = makeSession(delegate: recorder) { $0.courierDownloadDirectory = disk.folder }
                session.downloadTask(with: server.url("/file")).resume()
                await recorder.waitForCompletion()
                let error = try #require(recorder.snapshot.error)
                #expect(error.code == .cannotWriteToFile)
                let resumeData = try #require(error.downloadTaskResumeData)
                let kept = try ResumeData(decoding: resumeData)
                #expect(kept.bytesReceived > 0 && kept.bytesReceived <= 1024 * 1024)
                #expect(disk.grow(toKilobytes: 8192))
                let again = DownloadRecorder(copyDirectory: directory)
                let next = makeSession(delegate: again) { $0.courierDownloadDirectory = disk.folder }
                next.downloadTask(withResumeData: resumeData).resume()
                await again.waitForCompletion()
                #expect(again.snapshot.error == nil)
                let finished = try #require(again.snapshot.copiedTo)
                #expect(try fileHoldsPattern(finished, length: 3_000_000))
                #expect(server.requests(path: "/file").last?.header("Range") == "bytes=\(kept.bytesReceived)-")
                session.finishTasksAndInvalidate()
                next.finishTasksAndInvalidate()
            }
        }

        /// The same in a background session: the daemon's session folder fills up; the app gets a clean failure with
        /// resume data, and a new background task from it completes once there is room.
        @Test func aFullDiskInTheDaemonFailsCleanlyWithResumeData() async throws {
            let fixture = try BackgroundFixture()
            let disk = try SmallFileSystem(at: fixture.sessionFolder("app.full"), kilobytes: 1024)
            try await withServer { server in
                server.serveResource("/file", body: .pattern(length: 3_000_000))
                let recorder = BackgroundRecorder()
                let session = await fixture.session("app.full", delegate: recorder)
                session.downloadTask(with: server.url("/file")).resume()
                await recorder.waitForCompletions(1)
                let error = try #require(recorder.errors[1] ?? nil, "\(fixture.daemonLog)")
                #expect(error.code == .cannotWriteToFile)
                let resumeData = try #require(error.downloadTaskResumeData)
                #expect(disk.grow(toKilobytes: 8192))
                let second = session.downloadTask(withResumeData: resumeData)
                second.resume()
                await recorder.waitForCompletions(2)
                #expect(recorder.errors[second.taskIdentifier] == .some(nil), "\(fixture.daemonLog)")
                let finished = try #require(recorder.finished.first { $0.task == second.taskIdentifier })
                #expect(bytesAre(finished.bytes, MockBody.patternBytes(offset: 0, count: 3_000_000)))
                #expect(server.requests(path: "/file").last?.header("Range") != nil)
                session.invalidateAndCancel()
            }
            await fixture.killDaemon()
            disk.unmount()
            await fixture.tearDown()
        }
    }
}
