import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import Courier

#if canImport(Glibc)
    import Glibc
#endif

/// Background sessions against a real `courierd` (a child process started by the library) and the mock server.
@Suite("Background sessions: courierd runs the transfers", .serialized)
struct BackgroundSessionTests {
    /// A download runs in the daemon; the app's delegate gets progress, the file byte for byte, and the completion.
    @Test func aDownloadRunsInTheDaemon() async throws {
        let fixture = try BackgroundFixture()
        try await withServer { server in
            server.serveResource("/file", body: .pattern(length: 3_000_000))
            let recorder = BackgroundRecorder()
            let session = await fixture.session("app.one", delegate: recorder)
            let task = session.downloadTask(with: server.url("/file"))
            #expect(task.taskIdentifier == 1)
            task.resume()
            await recorder.waitForCompletions(1)
            #expect(recorder.events == ["finished 1", "completed 1 0"], "\(fixture.daemonLog)")
            let finished = try #require(recorder.finished.first)
            #expect(finished.bytes == MockBody.patternBytes(offset: 0, count: 3_000_000))
            #expect(recorder.bytesWritten(1) == 3_000_000)
            #expect((task.response as? HTTPURLResponse)?.statusCode == 200)
            #expect(task.state == .completed)
            // The daemon ran it: the app's process has no connection of its own to the server's port... the pid
            // file names a live process other than this one.
            let pid = try #require(fixture.daemonPID)
            #expect(pid != getpid() && kill(pid, 0) == 0)
            session.invalidateAndCancel()
        }
        await fixture.tearDown()
    }

    /// Data tasks, uploads from data and completion handlers are refused, as on Darwin.
    @Test func darwinsRefusalsHold() async throws {
        let fixture = try BackgroundFixture()
        let recorder = BackgroundRecorder()
        let session = await fixture.session("app.refusals", delegate: recorder)
        let url = URL(string: "http://127.0.0.1:9/x")!
        session.dataTask(with: url).resume()
        session.uploadTask(with: URLRequest(url: url), from: Data("x".utf8)).resume()
        let handled = NIOLockedValueBox<URLError?>(nil)
        session.downloadTask(with: url) { _, _, error in handled.withLockedValue { $0 = error as? URLError } }.resume()
        await recorder.waitForCompletions(2)
        for (_, error) in recorder.errors {
            #expect(error?.code == .unsupportedURL)
        }
        for _ in 0..<100 where handled.withLockedValue({ $0 }) == nil { try await Task.sleep(for: .milliseconds(10)) }
        #expect(handled.withLockedValue { $0 }?.code == .unsupportedURL)
        session.invalidateAndCancel()
        await fixture.tearDown()
    }

    /// One process at a time per identifier: a second session gets Darwin's error on its tasks.
    @Test func aSecondAttachIsRefused() async throws {
        let fixture = try BackgroundFixture()
        let first = await fixture.session("app.shared", delegate: BackgroundRecorder())
        let recorder = BackgroundRecorder()
        let second = await fixture.session("app.shared", delegate: recorder)
        second.downloadTask(with: URL(string: "http://127.0.0.1:9/x")!).resume()
        await recorder.waitForCompletions(1)
        #expect(recorder.errors[1]??.code == .backgroundSessionInUseByAnotherProcess)
        first.invalidateAndCancel()
        second.invalidateAndCancel()
        await fixture.tearDown()
    }
}
