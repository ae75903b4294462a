import CourierMockServer
import CourierStore
import CourierTestSupport
import Foundation
import Testing

@testable import Courier
@testable import courier

#if canImport(Glibc)
    import Glibc
#endif

extension BackgroundSuites {
    /// The app is a separate process (the `courier` command): it queues a download with the daemon and exits, or is
    /// killed; a later process collects the file.
    @Suite("Background sessions: the app as a process of its own", .serialized)
    struct BackgroundCLITests {
        static let length: Int64 = 50_000_000

        /// 50 MB, served slowly (about two seconds) to requests without `Range`.
        static func serveSlowly(_ server: MockServer) {
            server.serveResource("/big", body: .pattern(length: length)) { request, response in
                guard request.header("Range") == nil else { return }
                response.chunkSize = 256 * 1024
                response.chunkDelay = .milliseconds(10)
            }
        }

        /// `courier get --background` returns while the transfer runs; `queue list` shows it; `queue wait` in a new
        /// process saves the file byte for byte.
        @Test func aQueuedDownloadIsCollectedByALaterProcess() async throws {
            try await withBackgroundServer { fixture, server in
                Self.serveSlowly(server)
                let out = fixture.root.appendingPathComponent("big.bin")
                let queued = try await Self.queue("cli.one", server.url("/big"), to: out, fixture)
                #expect(String(decoding: queued.stdout, as: UTF8.self) == "cli.one\t1\t\(out.path)\n")
                #expect(!FileManager.default.fileExists(atPath: out.path))
                let listed = try await runCourier(["queue", "list", "cli.one"], environment: fixture.environment)
                #expect(String(decoding: listed.stdout, as: UTF8.self).hasPrefix("cli.one\t1\t"), "\(listed.stderr)")
                let waited = try await runCourier(["queue", "wait", "cli.one"], environment: fixture.environment)
                #expect(waited.status == 0, "\(waited.stderr)\n\(fixture.daemonLog)")
                #expect(try fileHoldsPattern(out, length: Self.length))
                // `queue wait` acknowledged the events on its own connection just before it exited; the daemon may
                // read the status request of this new connection first.
                var status = ""
                for _ in 0..<200 {
                    let answer = try await runCourier(["daemon", "status"], environment: fixture.environment)
                    status = String(decoding: answer.stdout, as: UTF8.self)
                    if status.contains("0 tasks") { break }
                    try await Task.sleep(for: .milliseconds(25))
                }
                #expect(status.contains("0 tasks"), "\(status)")
            }
        }

        /// The collecting process is killed (`SIGKILL`) mid-transfer; the next one still receives the file, whole.
        @Test func aKilledAppLosesNothing() async throws {
            try await withBackgroundServer { fixture, server in
                Self.serveSlowly(server)
                let out = fixture.root.appendingPathComponent("big.bin")
                try await Self.queue("cli.kill", server.url("/big"), to: out, fixture)
                let waiter = try ChildProcess(
                    courierBinary().path, ["queue", "wait", "cli.kill"], environment: fixture.environment)
                try await Task.sleep(for: .milliseconds(400))
                waiter.send(SIGKILL)
                #expect(await waiter.exitStatus() == 128 + SIGKILL)
                let waited = try await runCourier(["queue", "wait", "cli.kill"], environment: fixture.environment)
                #expect(waited.status == 0, "\(waited.stderr)\n\(fixture.daemonLog)")
                #expect(try fileHoldsPattern(out, length: Self.length))
            }
        }

        /// Runs `courier get --background IDENTIFIER URL -o OUT`, which must succeed.
        @discardableResult
        static func queue(_ identifier: String, _ url: URL, to out: URL, _ fixture: BackgroundFixture) async throws
            -> (status: Int32, stdout: Data, stderr: String)
        {
            let queued = try await runCourier(
                ["get", "--background", identifier, url.absoluteString, "-o", out.path],
                environment: fixture.environment)
            #expect(queued.status == 0, "\(queued.stderr)\n\(fixture.daemonLog)")
            return queued
        }

        /// Waits until `queue list` shows the session's task completed (its file held by the daemon).
        static func waitUntilCompleted(_ identifier: String, _ fixture: BackgroundFixture) async throws {
            for _ in 0..<400 {
                let listed = try await runCourier(["queue", "list", identifier], environment: fixture.environment)
                if String(decoding: listed.stdout, as: UTF8.self).contains("\tcompleted\t") { return }
                try await Task.sleep(for: .milliseconds(25))
            }
            Issue.record("the task of \(identifier) did not complete")
        }

        /// A finished download waits in the daemon's journal; the daemon stops (it quits a while after its last
        /// transfer, and does not outlive a reboot). `queue wait` starts it again and saves the file: it exited 0
        /// with nothing saved, and the download stayed in the daemon's folder.
        @Test func waitStartsTheDaemonToCollectWhatFinishedWhileNoneRan() async throws {
            try await withBackgroundServer { fixture, server in
                // Slow: a download that ends while `courier get` is still attached is saved by it instead.
                Self.serveSlowly(server)
                let out = fixture.root.appendingPathComponent("big.bin")
                try await Self.queue("cli.later", server.url("/big"), to: out, fixture)
                try await Self.waitUntilCompleted("cli.later", fixture)
                let pid = try #require(fixture.daemonPID)
                _ = try await runCourier(["daemon", "stop"], environment: fixture.environment)
                for _ in 0..<200 where kill(pid, 0) == 0 { try await Task.sleep(for: .milliseconds(10)) }
                #expect(kill(pid, 0) != 0)
                let waited = try await runCourier(["queue", "wait", "cli.later"], environment: fixture.environment)
                #expect(waited.status == 0, "\(waited.stderr)\n\(fixture.daemonLog)")
                #expect(try fileHoldsPattern(out, length: Self.length))
            }
        }

        /// A download so short that it ends before `courier get --background` has left its session: the daemon hands
        /// it to that process, which saves it (a later `queue wait` finds nothing to do); or it waits for `queue
        /// wait`. Either way it is saved and both exit 0. The queueing process's empty delegate let it be deleted,
        /// and it then failed with "courierd did not take the download" (about one run in four here).
        @Test func aDownloadThatEndsBeforeTheQueueingProcessLeftIsSaved() async throws {
            try await withBackgroundServer { fixture, server in
                server.route("/small", response: MockResponse(body: .pattern(length: 100_000)))
                for round in 0..<5 {
                    let identifier = "cli.fast\(round)"
                    let out = fixture.root.appendingPathComponent("small-\(round).bin")
                    try await Self.queue(identifier, server.url("/small"), to: out, fixture)
                    let waited = try await runCourier(["queue", "wait", identifier], environment: fixture.environment)
                    #expect(waited.status == 0, "\(waited.stderr)")
                    #expect(try fileHoldsPattern(out, length: 100_000), "round \(round)")
                }
            }
        }

        /// A finished download that cannot be put where it was asked for: its folder removed meanwhile, or a FIFO
        /// in its place (a device or a FIFO is not replaced by a file; as root, `-o /dev/null` replaced the device).
        /// `queue wait` fails, the file is kept in the unsaved folder and the FIFO is left alone. It exited 0, and
        /// the download was gone.
        @Test(arguments: ["folder gone", "FIFO"])
        func aDownloadThatCannotBeSavedFailsTheWaitAndIsKept(target: String) async throws {
            try await withBackgroundServer { fixture, server in
                // Slow: the download must end after the folder is gone, and after `courier get` has left.
                Self.serveSlowly(server)
                let folder = fixture.root.appendingPathComponent("out")
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
                let out = folder.appendingPathComponent("big.bin")
                if target == "FIFO" { #expect(mkfifo(out.path, 0o600) == 0) }
                try await Self.queue("cli.unsaved", server.url("/big"), to: out, fixture)
                if target == "folder gone" { try FileManager.default.removeItem(at: folder) }
                let waited = try await runCourier(["queue", "wait", "cli.unsaved"], environment: fixture.environment)
                #expect(waited.status == 1, "\(waited.stderr)")
                let unsaved = StoreLocation.sharedDataFolder("unsaved", environment: fixture.environment)
                let kept = try FileManager.default.contentsOfDirectory(atPath: unsaved.path)
                #expect(kept.count == 1, "\(waited.stderr)")
                if let name = kept.first {
                    #expect(try fileHoldsPattern(unsaved.appendingPathComponent(name), length: Self.length))
                    #expect(waited.stderr.contains(name))
                }
                if target == "FIFO" {
                    var info = stat()
                    #expect(lstat(out.path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFIFO)
                }
            }
        }

        /// A second `queue wait` for a session the first holds: the daemon refuses its attach, and it fails at once.
        /// It waited for events that could never come, for ever.
        @Test func aSecondWaitForAHeldSessionFailsInsteadOfHanging() async throws {
            try await withBackgroundServer { fixture, server in
                Self.serveSlowly(server)
                let out = fixture.root.appendingPathComponent("big.bin")
                try await Self.queue("cli.twice", server.url("/big"), to: out, fixture)
                let first = try ChildProcess(
                    courierBinary().path, ["queue", "wait", "-s", "cli.twice"], environment: fixture.environment)
                defer { first.send(SIGKILL) }
                // Attached once the daemon counts it beside the status request's own connection.
                var attached = false
                for _ in 0..<400 where !attached {
                    let status = try await runCourier(["daemon", "status"], environment: fixture.environment)
                    attached = String(decoding: status.stdout, as: UTF8.self).contains(" 2 clients")
                    if !attached { try await Task.sleep(for: .milliseconds(10)) }
                }
                #expect(attached, "the first queue wait did not attach")
                let second = try ChildProcess(
                    courierBinary().path, ["queue", "wait", "-s", "cli.twice"], environment: fixture.environment)
                for _ in 0..<1000 where second.isRunning { try await Task.sleep(for: .milliseconds(10)) }
                if second.isRunning {
                    Issue.record("the second queue wait did not end")
                    second.send(SIGKILL)
                }
                let secondStatus = await second.exitStatus()
                #expect(secondStatus == 1, "exit \(secondStatus)")
                #expect(await first.exitStatus() == 0)
                #expect(try fileHoldsPattern(out, length: Self.length))
            }
        }

        /// `daemon stop` ends the daemon; `queue list` then says nothing runs.
        @Test func theDaemonStopsOnRequest() async throws {
            let fixture = try BackgroundFixture()
            let none = try await runCourier(["daemon", "status"], environment: fixture.environment)
            #expect(String(decoding: none.stdout, as: UTF8.self) == "courierd is not running\n")
            _ = try await runCourier(
                [
                    "get", "--background", "cli.stop", "http://127.0.0.1:9/x", "-o",
                    fixture.root.appendingPathComponent("x").path,
                ],
                environment: fixture.environment)
            let pid = try #require(fixture.daemonPID)
            let stopped = try await runCourier(["daemon", "stop"], environment: fixture.environment)
            #expect(String(decoding: stopped.stdout, as: UTF8.self) == "stopped courierd \(pid)\n")
            for _ in 0..<200 where kill(pid, 0) == 0 { try await Task.sleep(for: .milliseconds(10)) }
            #expect(kill(pid, 0) != 0)
            await fixture.tearDown()
        }

        /// `sessionSendsLaunchEvents` with a launch command: the app leaves mid-transfer; when the download ends the
        /// daemon runs the command (here `courier queue wait`), which attaches and saves the file.
        @Test func theDaemonLaunchesTheAppForItsEvents() async throws {
            try await withBackgroundServer { fixture, server in
                BackgroundRecoveryTests.serveLate(server)
                let out = fixture.root.appendingPathComponent("launched.bin")
                let configuration = fixture.configuration("cli.launch")
                configuration.courierBackgroundLaunchCommand = [
                    courierBinary().path, "queue", "wait", "-s", "cli.launch",
                ]
                let session = await onOwnThread {
                    URLSession(configuration: configuration, delegate: BackgroundRecorder(), delegateQueue: nil)
                }
                let task = session.downloadTask(with: server.url("/file"))
                task.taskDescription = out.path
                task.resume()
                try #require(session.backgroundClient).detach()
                await BackgroundRecoveryTests.waitUntil { FileManager.default.fileExists(atPath: out.path) }
                try #require(FileManager.default.fileExists(atPath: out.path), "\(fixture.daemonLog)")
                #expect(try fileHoldsPattern(out, length: BackgroundRecoveryTests.length))
                #expect(fixture.daemonLog.contains("launched \(courierBinary().path)"))
            }
        }
    }
}
