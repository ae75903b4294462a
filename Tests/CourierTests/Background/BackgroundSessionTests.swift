import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import Courier

#if canImport(Glibc)
    import Glibc
#endif

extension BackgroundSuites {
    /// Background sessions against a real `courierd` (a child process started by the library) and the mock server.
    @Suite("Background sessions: courierd runs the transfers", .serialized)
    struct BackgroundSessionTests {
        /// A download runs in the daemon; the app's delegate gets progress, the file byte for byte, and the completion.
        @Test func aDownloadRunsInTheDaemon() async throws {
            try await withBackgroundServer { fixture, server in
                server.serveResource("/file", body: .pattern(length: 3_000_000))
                let recorder = BackgroundRecorder()
                let session = await fixture.session("app.one", delegate: recorder)
                let task = session.downloadTask(with: server.url("/file"))
                #expect(task.taskIdentifier == 1)
                task.resume()
                await recorder.waitForCompletions(1)
                #expect(recorder.events == ["finished 1", "completed 1 0"], "\(fixture.daemonLog)")
                let finished = try #require(recorder.finished.first)
                #expect(bytesAre(finished.bytes, MockBody.patternBytes(offset: 0, count: 3_000_000)))
                #expect(recorder.bytesWritten(1) == 3_000_000)
                #expect((task.response as? HTTPURLResponse)?.statusCode == 200)
                #expect(task.state == .completed)
                // The daemon ran it: the app's process has no connection of its own to the server's port... the pid
                // file names a live process other than this one.
                let pid = try #require(fixture.daemonPID)
                #expect(pid != getpid() && kill(pid, 0) == 0)
                session.invalidateAndCancel()
            }
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
            session.downloadTask(with: url) { _, _, error in handled.withLockedValue { $0 = error as? URLError } }
                .resume()
            await recorder.waitForCompletions(2)
            #expect(recorder.errors.count == 2)
            for (_, error) in recorder.errors {
                #expect(error?.code == .unsupportedURL)
            }
            for _ in 0..<100 where handled.withLockedValue({ $0 }) == nil {
                try await Task.sleep(for: .milliseconds(10))
            }
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

        /// A session re-created with the identifier of one this process just invalidated attaches, although the old
        /// connection's close is still queued behind the old session's delegate queue: the identifier is free after
        /// invalidation, as on Darwin, instead of being refused as in use by another process.
        @Test func theIdentifierOfAnInvalidatedSessionIsFreeAtOnce() async throws {
            try await withBackgroundServer { fixture, server in
                server.serveResource("/file", body: .pattern(length: 1000))
                let busy = OperationQueue()
                busy.maxConcurrentOperationCount = 1
                let release = DispatchSemaphore(value: 0)
                let configuration = fixture.configuration("app.again")
                let first = await onOwnThread {
                    URLSession(configuration: configuration, delegate: BackgroundRecorder(), delegateQueue: busy)
                }
                // The old session's delegate queue is busy: its connection closes only once it is free again.
                busy.addOperation { release.wait() }
                first.invalidateAndCancel()
                let releasing = Task.detached {
                    try? await Task.sleep(for: .milliseconds(300))
                    release.signal()
                }
                let recorder = BackgroundRecorder()
                let second = await fixture.session("app.again", delegate: recorder)
                second.downloadTask(with: server.url("/file")).resume()
                await recorder.waitForCompletions(1)
                #expect(recorder.errors[1] == .some(nil), "\(fixture.daemonLog)")
                #expect(
                    bytesAre(recorder.finished.first?.bytes ?? Data(), MockBody.patternBytes(offset: 0, count: 1000)))
                await releasing.value
                second.invalidateAndCancel()
            }
        }

        /// A daemon exiting for idleness as a session connects (it accepts, then closes without an answer): the
        /// session starts a new one and attaches, instead of failing its tasks.
        @Test func aDaemonExitingAsTheSessionConnectsIsReplaced() async throws {
            let fixture = try BackgroundFixture()
            let folder = fixture.root.appendingPathComponent("run/courier")
            try FileManager.default.createDirectory(
                at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let socket = folder.appendingPathComponent("courierd.sock").path
            let listener = try UnixSocket.listen(at: socket)
            // The exiting daemon: one connection accepted and closed unanswered, then its socket is gone.
            let exiting = Task.detached {
                await onOwnThread {
                    if let descriptor = UnixSocket.accept(on: listener) {
                        usleep(50_000)
                        close(descriptor)
                    }
                    unlink(socket)
                    close(listener)
                }
            }
            try await withServer { server in
                server.serveResource("/file", body: .pattern(length: 1000))
                let recorder = BackgroundRecorder()
                let session = await fixture.session("app.idle", delegate: recorder)
                await exiting.value
                session.downloadTask(with: server.url("/file")).resume()
                await recorder.waitForCompletions(1)
                #expect(recorder.errors[1] == .some(nil), "\(fixture.daemonLog)")
                #expect(
                    bytesAre(recorder.finished.first?.bytes ?? Data(), MockBody.patternBytes(offset: 0, count: 1000)))
                session.invalidateAndCancel()
            }
            await fixture.tearDown()
        }
    }

    /// The daemon's socket file is the user's alone whatever the umask: the mode is set on the file, not by narrowing
    /// the process's umask around bind(2), which every other thread creating a file meanwhile saw. Checked in a
    /// daemon started with umask 0 (in this process a umask of 0 would reach every test running alongside).
    @Suite("Background sessions: the socket's mode")
    struct BackgroundSocketModeTests {
        @Test func theSocketIsOwnerOnlyUnderAnOpenUmask() async throws {
            let fixture = try BackgroundFixture()
            let daemon = try #require(fixture.environment["COURIERD_PATH"])
            let child = try ChildProcess(
                "/bin/sh", ["-c", "umask 0 && exec \"$0\"", daemon], environment: fixture.environment)
            // The pid file is written once the daemon listens.
            for _ in 0..<1000 where fixture.daemonPID == nil && child.isRunning {
                try await Task.sleep(for: .milliseconds(10))
            }
            let started = fixture.daemonPID != nil
            var info = stat()
            let socket = fixture.root.appendingPathComponent("run/courier/courierd.sock").path
            let found = lstat(socket, &info) == 0
            await fixture.tearDown()
            await child.exitStatus()
            try #require(started && found, "courierd did not listen")
            #expect(info.st_mode & S_IFMT == S_IFSOCK)
            #expect(info.st_mode & 0o777 == 0o600, "\(String(info.st_mode & 0o777, radix: 8))")
        }
    }

    /// systemd's socket activation: a daemon given its listening socket as descriptor 3 (`LISTEN_FDS`, `LISTEN_PID`)
    /// serves on it, and the session, which finds the socket answering, starts none of its own.
    @Suite("Background sessions: socket activation")
    struct BackgroundActivationTests {
        @Test func aDaemonServesTheSocketSystemdPassed() async throws {
            let fixture = try BackgroundFixture()
            let folder = fixture.root.appendingPathComponent("run/courier")
            try FileManager.default.createDirectory(
                at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let listener = try UnixSocket.listen(at: folder.appendingPathComponent("courierd.sock").path)
            let daemon = try #require(fixture.environment["COURIERD_PATH"])
            // As systemd starts a service: the socket at descriptor 3, and LISTEN_PID naming the service's process
            // (the shell's, which the daemon replaces).
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_adddup2(&actions, listener, 3)
            let log = folder.appendingPathComponent("courierd.log").path
            posix_spawn_file_actions_addopen(&actions, 2, log, O_WRONLY | O_CREAT | O_APPEND, 0o600)
            // Nothing else of this process: systemd passes only the sockets, and the test process holds other tests'
            // descriptors (a pipe or a terminal whose reader waits for its end, which the daemon would keep open).
            if let closeFrom = ChildProcess.closeFrom { _ = closeFrom(&actions, 4) }
            // A descriptor without close-on-exec (as another test's may be): the daemon must not have it.
            let markerPath = folder.appendingPathComponent("marker").path
            let opened = open(markerPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            try #require(opened >= 0)
            let marker = inheritableDuplicate(of: opened, atLeast: 4)
            close(opened)
            try #require(marker >= 4)
            // The marker as the kernel names it (the temporary folder's path may go through a link).
            let markerTarget = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(marker)")
            let arguments = ["/bin/sh", "-c", "LISTEN_PID=$$ LISTEN_FDS=1 exec \"$0\"", daemon]
            let variables = fixture.environment.map { "\($0.key)=\($0.value)" }
            let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
            let envp: [UnsafeMutablePointer<CChar>?] = variables.map { strdup($0) } + [nil]
            defer { for pointer in argv + envp { free(pointer) } }
            var pid = pid_t()
            #expect(posix_spawn(&pid, "/bin/sh", &actions, nil, argv, envp) == 0)
            close(listener)
            close(marker)
            try await withServer { server in
                server.serveResource("/file", body: .pattern(length: 5000))
                let recorder = BackgroundRecorder()
                let session = await fixture.session("app.activated", delegate: recorder)
                session.downloadTask(with: server.url("/file")).resume()
                await recorder.waitForCompletions(1)
                #expect(recorder.errors[1] == .some(nil), "\(fixture.daemonLog)")
                #expect(
                    bytesAre(recorder.finished.first?.bytes ?? Data(), MockBody.patternBytes(offset: 0, count: 5000)))
                #expect(fixture.daemonPID == pid)
                // The daemon's descriptor 3 is the socket (so its descriptors can be read here); the marker's number
                // is not the marker.
                let descriptors = "/proc/\(pid)/fd/"
                let socket = try? FileManager.default.destinationOfSymbolicLink(atPath: descriptors + "3")
                #expect(socket?.hasPrefix("socket:") == true, "\(socket ?? "unreadable")")
                let inherited = try? FileManager.default.destinationOfSymbolicLink(atPath: descriptors + "\(marker)")
                #expect(inherited != markerTarget)
                session.invalidateAndCancel()
            }
            await fixture.tearDown()
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
    }

    /// The daemon's crashes, the app's departure and a hostile network: nothing is lost and nothing is spliced.
    @Suite("Background sessions: surviving crashes", .serialized)
    struct BackgroundRecoveryTests {
        static let length: Int64 = 8_000_000

        /// Serves `/file` (pattern bytes, `ETag: "v1"`); requests without `Range` trickle, so that a test can act
        /// mid-transfer.
        static func serveSlowly(_ server: MockServer) {
            server.serveResource("/file", body: .pattern(length: length)) { request, response in
                guard request.header("Range") == nil else { return }
                response.chunkSize = 16 * 1024
                response.chunkDelay = .milliseconds(3)
            }
        }

        /// Serves `/file`; requests without `Range` send 3,000,000 bytes and then stall with the connection open, so
        /// that a test acts mid-transfer however loaded the machine is.
        static func serveStalling(_ server: MockServer) {
            server.serveResource("/file", body: .pattern(length: length)) { request, response in
                guard request.header("Range") == nil else { return }
                response.stallAfterBodyBytes = stallOffset
            }
        }

        static let stallOffset = 3_000_000

        /// Serves `/file`; requests without `Range` answer only after 1.5 s, so that an app can leave before anything
        /// happens.
        static func serveLate(_ server: MockServer) {
            server.serveResource("/file", body: .pattern(length: length)) { request, response in
                guard request.header("Range") == nil else { return }
                response.headDelay = .milliseconds(1500)
            }
        }

        /// Waits until `condition` holds; records an issue if `timeout` passes first.
        static func waitUntil(
            _ condition: () -> Bool, timeout: Duration = .seconds(30), sourceLocation: SourceLocation = #_sourceLocation
        ) async {
            let deadline = ContinuousClock.now + timeout
            while !condition() {
                guard ContinuousClock.now < deadline else {
                    Issue.record("the condition did not hold within \(timeout)", sourceLocation: sourceLocation)
                    return
                }
                try? await Task.sleep(for: .milliseconds(10))
            }
        }

        /// `kill -9` of the daemon mid-transfer: the session starts a new one, which continues from the last durable
        /// offset with a range request; the file is the resource byte for byte.
        @Test func aKilledDaemonContinuesWithARange() async throws {
            try await withBackgroundServer { fixture, server in
                Self.serveStalling(server)
                let recorder = BackgroundRecorder()
                let session = await fixture.session("app.kill", delegate: recorder)
                session.downloadTask(with: server.url("/file")).resume()
                await Self.waitUntil { recorder.bytesWritten(1) > 2_500_000 }
                let first = try #require(fixture.daemonPID)
                await fixture.killDaemon()
                await recorder.waitForCompletions(1)
                #expect(recorder.events == ["finished 1", "completed 1 0"], "\(fixture.daemonLog)")
                let finished = try #require(recorder.finished.first)
                #expect(bytesAre(finished.bytes, MockBody.patternBytes(offset: 0, count: Int(Self.length))))
                #expect(fixture.daemonPID != first)
                let requests = server.requests(path: "/file")
                #expect(requests.count == 2)
                let range = try #require(requests.last?.header("Range"))
                let offset = Int64(range.dropFirst("bytes=".count).dropLast()) ?? 0
                // A durable checkpoint: at least the second one (2 MiB), at most what was sent before the stall.
                #expect(offset >= 2 << 20 && offset <= Self.stallOffset, "\(range)")
                #expect(requests.last?.header("If-Range") == "\"v1\"")
                session.invalidateAndCancel()
            }
        }

        /// The resource changes while the daemon is down: the continuation's `If-Range` gets the whole new version,
        /// which replaces the old bytes — never two versions spliced.
        @Test func aChangedValidatorRestartsTheDownload() async throws {
            try await withBackgroundServer { fixture, server in
                Self.serveStalling(server)
                let recorder = BackgroundRecorder()
                let session = await fixture.session("app.etag", delegate: recorder)
                session.downloadTask(with: server.url("/file")).resume()
                await Self.waitUntil { recorder.bytesWritten(1) > 2_500_000 }
                let replacement = Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 * 7 + 1) })
                await fixture.killDaemon()
                server.serveResource("/file", body: .data(replacement), etag: "\"v2\"")
                await recorder.waitForCompletions(1)
                let finished = try #require(recorder.finished.first, "\(fixture.daemonLog)")
                #expect(bytesAre(finished.bytes, replacement))
                #expect(server.requests(path: "/file").last?.header("If-Range") == "\"v1\"")
                session.invalidateAndCancel()
            }
        }

        /// The server drops the connection ten times: the daemon continues each time from where it stopped and the
        /// download completes byte for byte.
        @Test func tenDroppedConnectionsStillComplete() async throws {
            try await withBackgroundServer { fixture, server in
                let drops = NIOLockedValueBox(0)
                server.serveResource("/file", body: .pattern(length: 2_000_000)) { _, response in
                    let dropped = drops.withLockedValue { count in
                        count += 1
                        return count <= 10
                    }
                    if dropped { response.closeAfterBodyBytes = 150_000 }
                }
                let recorder = BackgroundRecorder()
                let session = await fixture.session("app.drops", delegate: recorder)
                session.downloadTask(with: server.url("/file")).resume()
                await recorder.waitForCompletions(1)
                #expect(recorder.events == ["finished 1", "completed 1 0"], "\(fixture.daemonLog)")
                #expect(
                    bytesAre(
                        recorder.finished.first?.bytes ?? Data(), MockBody.patternBytes(offset: 0, count: 2_000_000)))
                let requests = server.requests(path: "/file")
                #expect(requests.count == 11)
                #expect(requests.dropFirst().allSatisfy { $0.header("Range") != nil })
                session.invalidateAndCancel()
            }
        }

        /// A continuation answered with `503` and `Retry-After` is tried again from the same offset: the bytes already
        /// downloaded are not thrown away with the refused answer (the engine deletes the partial file for it).
        @Test func aRefusedContinuationKeepsThePartialFile() async throws {
            try await withBackgroundServer { fixture, server in
                let calls = NIOLockedValueBox(0)
                server.serveResource("/file", body: .pattern(length: 2_000_000)) { _, response in
                    let call = calls.withLockedValue { count in
                        count += 1
                        return count
                    }
                    if call == 1 { response.closeAfterBodyBytes = 700_000 }
                    if call == 2 {
                        response = MockResponse.status(503)
                        response.headers.append((name: "Retry-After", value: "0"))
                    }
                }
                let recorder = BackgroundRecorder()
                let session = await fixture.session("app.refused", delegate: recorder)
                session.downloadTask(with: server.url("/file")).resume()
                await recorder.waitForCompletions(1)
                #expect(recorder.events == ["finished 1", "completed 1 0"], "\(fixture.daemonLog)")
                #expect(
                    bytesAre(
                        recorder.finished.first?.bytes ?? Data(), MockBody.patternBytes(offset: 0, count: 2_000_000)))
                let requests = server.requests(path: "/file")
                #expect(requests.count == 3, "\(requests.map { $0.header("Range") ?? "-" }) \(fixture.daemonLog)")
                let continued = requests.dropFirst().map { $0.header("Range") }
                #expect(continued.count == 2 && continued[0] != nil && continued[0] == continued[1], "\(continued)")
                session.invalidateAndCancel()
            }
        }

        /// A `503` with `Retry-After` is tried again; the app sees only the final answer.
        @Test func aServiceUnavailableWithRetryAfterIsRetried() async throws {
            try await withBackgroundServer { fixture, server in
                let calls = NIOLockedValueBox(0)
                server.route("/busy") { _ in
                    let call = calls.withLockedValue { count in
                        count += 1
                        return count
                    }
                    if call == 1 {
                        var busy = MockResponse.status(503)
                        busy.headers.append((name: "Retry-After", value: "0"))
                        return busy
                    }
                    return .ok("ready")
                }
                let recorder = BackgroundRecorder()
                let session = await fixture.session("app.busy", delegate: recorder)
                let task = session.downloadTask(with: server.url("/busy"))
                task.resume()
                await recorder.waitForCompletions(1)
                #expect(bytesAre(recorder.finished.first?.bytes ?? Data(), Data("ready".utf8)), "\(fixture.daemonLog)")
                #expect((task.response as? HTTPURLResponse)?.statusCode == 200)
                #expect(calls.withLockedValue { $0 } == 2)
                session.invalidateAndCancel()
            }
        }

        /// A session whose delegate queue is `queue` (made on a thread of its own: attaching blocks).
        static func session(
            _ fixture: BackgroundFixture, _ identifier: String, delegate: BackgroundRecorder, queue: OperationQueue
        ) async -> URLSession {
            let configuration = fixture.configuration(identifier)
            return await onOwnThread {
                URLSession(configuration: configuration, delegate: delegate, delegateQueue: queue)
            }
        }

        /// The daemon's listing of `identifier`'s tasks, from the daemon running now (`nil`: none answers).
        static func listed(_ fixture: BackgroundFixture, _ identifier: String) async -> [BackgroundTaskSnapshot]? {
            let environment = fixture.environment
            let reply = await onOwnThread {
                try? BackgroundControl.ask(.list(identifier: identifier), environment: environment)
            }
            if case .listed(let tasks) = reply { return tasks }
            return nil
        }

        /// The daemon restarts while the app's delegate queue still holds the completion it sent: the replayed
        /// completion is acknowledged only behind that delegate call, so the daemon keeps the file until the
        /// delegate has read it.
        @Test func aReplayedCompletionIsAcknowledgedAfterItsFirstDelivery() async throws {
            try await withBackgroundServer { fixture, server in
                server.serveResource("/small", body: .pattern(length: 100_000))
                let recorder = BackgroundRecorder()
                let queue = OperationQueue()
                queue.maxConcurrentOperationCount = 1
                let session = await Self.session(fixture, "app.replay", delegate: recorder, queue: queue)
                let gate = DispatchSemaphore(value: 0)
                queue.addOperation { gate.wait() }
                session.downloadTask(with: server.url("/small")).resume()
                await fixture.waitUntilCompleted("app.replay", task: 1)
                // The completion reaches the app; its delegate calls wait behind the gate.
                try await Task.sleep(for: .milliseconds(300))
                let first = try #require(fixture.daemonPID)
                await fixture.killDaemon()
                // The session starts a new daemon, which replays the completion. An acknowledgement sent at once makes
                // it forget the task (and delete the file): wait for that, or a while.
                let deadline = ContinuousClock.now + .seconds(5)
                while ContinuousClock.now < deadline {
                    if fixture.daemonPID != first, let tasks = await Self.listed(fixture, "app.replay"), tasks.isEmpty {
                        break
                    }
                    try await Task.sleep(for: .milliseconds(50))
                }
                try await Task.sleep(for: .milliseconds(200))
                gate.signal()
                await recorder.waitForCompletions(1)
                let finished = try #require(recorder.finished.first, "\(fixture.daemonLog)")
                #expect(bytesAre(finished.bytes, MockBody.patternBytes(offset: 0, count: 100_000)))
                #expect(recorder.events == ["finished 1", "completed 1 0"])
                #expect(await session.allTasks.isEmpty)
                session.invalidateAndCancel()
            }
        }

        /// The app handled a completion, but the daemon went away before the acknowledgement reached it: after the
        /// session re-attached to a new daemon, the task is not listed again (a task object that would never
        /// complete, and keep `finishTasksAndInvalidate` from ever finishing), and its completion is not delivered
        /// twice.
        @Test func aCompletionHandledBeforeTheDaemonRestartedIsNotATaskAgain() async throws {
            try await withBackgroundServer { fixture, server in
                server.serveResource("/small", body: .pattern(length: 100_000))
                let recorder = BackgroundRecorder()
                let queue = OperationQueue()
                queue.maxConcurrentOperationCount = 1
                let session = await Self.session(fixture, "app.handled", delegate: recorder, queue: queue)
                let gate = DispatchSemaphore(value: 0)
                queue.addOperation { gate.wait() }
                session.downloadTask(with: server.url("/small")).resume()
                await fixture.waitUntilCompleted("app.handled", task: 1)
                try await Task.sleep(for: .milliseconds(300))
                // The daemon stops before it reads the acknowledgement, then dies with it unread.
                let first = try #require(fixture.daemonPID)
                #expect(kill(first, SIGSTOP) == 0)
                gate.signal()
                await recorder.waitForCompletions(1)
                try await Task.sleep(for: .milliseconds(200))
                await fixture.killDaemon()
                // The new daemon forgets the task once the session re-attached and acknowledged the replay.
                let deadline = ContinuousClock.now + .seconds(20)
                while ContinuousClock.now < deadline {
                    if fixture.daemonPID != first, let tasks = await Self.listed(fixture, "app.handled"),
                        tasks.isEmpty
                    {
                        break
                    }
                    try await Task.sleep(for: .milliseconds(50))
                }
                #expect(fixture.daemonPID != first, "\(fixture.daemonLog)")
                #expect(await Self.listed(fixture, "app.handled")?.isEmpty == true)
                #expect(await session.allTasks.isEmpty)
                #expect(recorder.events == ["finished 1", "completed 1 0"])
                session.invalidateAndCancel()
            }
        }

        /// The daemon dies with the app's `create` unread in its socket: the session re-attaches to a new daemon,
        /// which does not know the task, and creates it again; the task completes instead of waiting for ever.
        @Test func aTaskWhoseCreationTheDaemonNeverReadIsCreatedAgain() async throws {
            try await withBackgroundServer { fixture, server in
                server.serveResource("/small", body: .pattern(length: 100_000))
                let recorder = BackgroundRecorder()
                let session = await fixture.session("app.unread", delegate: recorder)
                let first = try #require(fixture.daemonPID)
                #expect(kill(first, SIGSTOP) == 0)
                session.downloadTask(with: server.url("/small")).resume()
                try await Task.sleep(for: .milliseconds(200))
                await fixture.killDaemon()
                await recorder.waitForCompletions(1, timeout: .seconds(20))
                #expect(fixture.daemonPID != first)
                #expect(recorder.events == ["finished 1", "completed 1 0"], "\(fixture.daemonLog)")
                let finished = try #require(recorder.finished.first)
                #expect(bytesAre(finished.bytes, MockBody.patternBytes(offset: 0, count: 100_000)))
                session.invalidateAndCancel()
            }
        }

        /// The app goes away mid-transfer; the daemon finishes alone and keeps the events; the next session with the
        /// identifier lists the task, then receives the file and the completion, in order, then
        /// `urlSessionDidFinishEvents`.
        @Test func eventsWaitForTheNextSession() async throws {
            try await withBackgroundServer { fixture, server in
                Self.serveLate(server)
                let first = BackgroundRecorder()
                let gone = await fixture.session("app.later", delegate: first)
                gone.downloadTask(with: server.url("/file")).resume()
                try #require(gone.backgroundClient).detach()
                await fixture.waitForNoClients()
                let recorder = BackgroundRecorder()
                let session = await fixture.session("app.later", delegate: recorder)
                let listed = await session.allTasks
                #expect(listed.map(\.taskIdentifier) == [1])
                #expect(listed.first is URLSessionDownloadTask)
                #expect(listed.first?.originalRequest?.url == server.url("/file"))
                await recorder.waitForCompletions(1)
                await Self.waitUntil { recorder.drainedCount == 1 }
                #expect(first.events.isEmpty)
                #expect(
                    bytesAre(
                        recorder.finished.first?.bytes ?? Data(),
                        MockBody.patternBytes(offset: 0, count: Int(Self.length)))
                )
                #expect(recorder.events == ["finished 1", "completed 1 0", "drained"])
                // The next task continues the numbering.
                #expect(session.downloadTask(with: server.url("/file")).taskIdentifier == 2)
                session.invalidateAndCancel()
            }
        }

        /// A process without `XDG_RUNTIME_DIR` (a cron job, `sudo -u`) has another runtime folder than the login
        /// session but the same journal: it reaches the daemon that runs the journal and never starts a second one,
        /// which would continue every task of the journal again, into the same task folders.
        @Test func oneJournalHasOneDaemonWhateverTheRuntimeFolder() async throws {
            let fixture = try BackgroundFixture()
            let login = fixture.environment
            var cron = fixture.environment
            cron["XDG_RUNTIME_DIR"] = fixture.root.appendingPathComponent("run2").path
            func daemonPID(_ environment: [String: String]) async -> Int32? {
                await onOwnThread { () -> Int32? in
                    let reply = try? BackgroundControl.ask(.status, startingDaemon: true, environment: environment)
                    guard case .status(let pid, _, _) = reply else { return nil }
                    return pid
                }
            }
            let first = await daemonPID(login)
            let second = await daemonPID(cron)
            let log = fixture.daemonLog
            if let second, second != first { kill(second, SIGKILL) }
            await fixture.tearDown()
            #expect(first != nil, "\(log)")
            #expect(second == first, "\(log)")
        }
    }
}
