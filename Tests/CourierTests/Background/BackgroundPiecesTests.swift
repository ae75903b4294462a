import CourierStore
import CourierTestSupport
import Foundation
import Logging
import Testing

@testable import Courier
@testable import CourierDaemon
@testable import CourierHTTP

#if canImport(Glibc)
    import Glibc
#endif

extension BackgroundSuites {
    /// The pieces of background sessions without a daemon: folder names, frames, the peer check, the retry rules and
    /// the journal.
    @Suite("Background sessions: the pieces")
    struct BackgroundPiecesTests {
        /// Identifiers become one path component each, never `.`/`..` or a separator, and two identifiers never share one.
        @Test func identifiersBecomeSafeDistinctFolderNames() {
            let identifiers = ["app.one", "../etc", "..", ".", "", "a/b", "a%2Fb", "ünï", "a b", ".hidden", "a.b."]
            let components = identifiers.map(BackgroundLocation.component)
            #expect(Set(components).count == identifiers.count)
            for component in components {
                #expect(!component.contains("/") && component != "." && component != ".." && !component.isEmpty)
                #expect(!component.hasPrefix("."))
            }
            #expect(BackgroundLocation.component("app.one") == "app.one")
        }

        /// Without `XDG_RUNTIME_DIR` the runtime folder is `/tmp/courier-<uid>`.
        /// The daemon's numeric settings come from the environment: values past an integer's range are clamped, not
        /// converted (a conversion out of range traps), and unusable ones fall back to the defaults.
        @Test func hugeOrBrokenSettingsNeitherTrapNorStick() {
            let huge = DaemonSettings(environment: [
                "COURIERD_MAX_TRANSFERS": "1e19", "COURIERD_CHECKPOINT_BYTES": "1e300",
            ])
            #expect(huge.maximumTransfers == 4096)
            #expect(huge.checkpointBytes == 1 << 62)
            let broken = DaemonSettings(environment: [
                "COURIERD_MAX_TRANSFERS": "nan", "COURIERD_CHECKPOINT_BYTES": "-1",
            ])
            #expect(broken.maximumTransfers == 4)
            #expect(broken.checkpointBytes == 16 << 20)
        }

        @Test func theRuntimeFolderFallsBackToTmp() {
            let location = BackgroundLocation(environment: ["HOME": "/home/x"])
            #expect(location.runtimeFolder.path == "/tmp/courier-\(geteuid())")
            #expect(location.dataFolder.path == "/home/x/.local/share/courier/background")
            let set = BackgroundLocation(environment: ["XDG_RUNTIME_DIR": "/run/user/7", "XDG_DATA_HOME": "/d"])
            #expect(set.socket.path == "/run/user/7/courier/courierd.sock")
            #expect(set.journal.path == "/d/courier/background/journal.sqlite")
        }

        /// Messages survive the frame; an oversized length or bytes that do not decode end the connection.
        @Test func framesCarryMessagesAndRefuseHostileOnes() throws {
            var ends: [Int32] = [0, 0]
            try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0)
            let left = FrameChannel(descriptor: ends[0], label: "left")
            let right = FrameChannel(descriptor: ends[1], label: "right")
            let request = BackgroundRequest.cancel(task: 7, producingResumeData: true)
            #expect(left.sendNow(request))
            #expect(right.receive(BackgroundRequest.self) == request)
            // A length over the limit: the reader gives up rather than allocating it.
            var huge = Data([0x7F, 0xFF, 0xFF, 0xFF])
            huge.append(contentsOf: [UInt8](repeating: 0x20, count: 16))
            _ = huge.withUnsafeBytes { send(ends[0], $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            #expect(right.receive(BackgroundRequest.self) == nil)

            var more: [Int32] = [0, 0]
            try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &more) == 0)
            let reader = FrameChannel(descriptor: more[1], label: "reader")
            let garbage = Data([0, 0, 0, 5]) + Data("{oops".utf8)
            _ = garbage.withUnsafeBytes { send(more[0], $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            #expect(reader.receive(BackgroundRequest.self) == nil)
            close(more[0])
        }

        /// The daemon admits only its own user: the peer's uid comes from the kernel (`SO_PEERCRED`).
        @Test func onlyTheSameUserIsAdmitted() throws {
            #expect(UnixSocket.admits(peer: geteuid()))
            #expect(!UnixSocket.admits(peer: nil))
            #expect(!UnixSocket.admits(peer: 65534, owner: 1000))
            #expect(!UnixSocket.admits(peer: 0, owner: 1000))
            var ends: [Int32] = [0, 0]
            try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0)
            let channel = FrameChannel(descriptor: ends[0], label: "peer")
            #expect(channel.peerUserID == geteuid())
            close(ends[1])
        }

        /// A connection made by another user (`nobody`, through `setpriv`) is seen as that user and refused. Needs root
        /// and `setpriv` to switch users.
        @Test(.enabled(if: geteuid() == 0 && access("/usr/bin/setpriv", X_OK) == 0))
        func anotherUsersConnectionIsRefused() async throws {
            let root = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: root) }
            let folder = root.appendingPathComponent("courier")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            chmod(root.path, 0o755)
            chmod(folder.path, 0o755)
            chmod(root.deletingLastPathComponent().path, 0o1777)
            let listener = try UnixSocket.listen(at: folder.appendingPathComponent("courierd.sock").path)
            defer { close(listener) }
            chmod(folder.appendingPathComponent("courierd.sock").path, 0o777)
            let child = try ChildProcess(
                "/usr/bin/setpriv",
                ["--reuid=65534", "--regid=65534", "--clear-groups", courierBinary().path, "daemon", "status"],
                environment: ["XDG_RUNTIME_DIR": root.path, "HOME": "/nonexistent", "PATH": "/usr/bin:/bin"])
            let descriptor = await onOwnThread { UnixSocket.accept(on: listener) }
            let accepted = try #require(descriptor)
            let channel = FrameChannel(descriptor: accepted, label: "stranger")
            #expect(channel.peerUserID == 65534)
            #expect(!UnixSocket.admits(peer: channel.peerUserID))
            channel.shutDown()
            await child.exitStatus()
        }

        /// The app talks only to its own user's daemon: a socket another local user listens on is refused, here at
        /// the path a daemon of this user published before it crashed (the published file stays; a restart clears
        /// `/tmp`, where another user can then make the folder). Connected, the stranger would receive the app's
        /// requests, cookies and passwords and could send events naming any of the user's files, which the app
        /// deletes after its delegate ran. Needs root and `setpriv` to run the stranger's daemon as `nobody`.
        @Test(.enabled(if: geteuid() == 0 && access("/usr/bin/setpriv", X_OK) == 0))
        func anotherUsersSocketIsNeverTheDaemon() async throws {
            let root = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: root) }
            chmod(root.path, 0o755)
            chmod(root.deletingLastPathComponent().path, 0o1777)
            let stranger = root.appendingPathComponent("stranger")
            for name in ["run", "data"] {
                let folder = stranger.appendingPathComponent(name)
                try FileManager.default.createDirectory(
                    at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
                #expect(chown(folder.path, 65534, 65534) == 0)
            }
            chmod(stranger.path, 0o755)
            let daemon = courierBinary().deletingLastPathComponent().appendingPathComponent("courierd")
            let child = try ChildProcess(
                "/usr/bin/setpriv",
                ["--reuid=65534", "--regid=65534", "--clear-groups", daemon.path],
                environment: [
                    "XDG_RUNTIME_DIR": stranger.appendingPathComponent("run").path,
                    "XDG_DATA_HOME": stranger.appendingPathComponent("data").path,
                    "HOME": "/nonexistent", "PATH": "/usr/bin:/bin", "COURIERD_IDLE_TIMEOUT": "60",
                ])
            defer { child.send(SIGKILL) }
            // The pid file is written once the stranger's daemon listens.
            let pidFile = stranger.appendingPathComponent("run/courier/courierd.pid").path
            for _ in 0..<1000 where access(pidFile, F_OK) != 0 {
                try await Task.sleep(for: .milliseconds(10))
            }
            let planted = stranger.appendingPathComponent("run/courier/courierd.sock").path
            #expect(access(pidFile, F_OK) == 0, "the stranger's courierd did not start")

            switch UnixSocket.connect(to: planted) {
            case .success(let descriptor):
                close(descriptor)
                Issue.record("connected to another user's socket")
            case .failure(let failure):
                #expect(failure.code == EPERM)
            }
            // This user's journal names the stranger's socket (no daemon of this user runs).
            let location = BackgroundLocation(environment: [
                "HOME": root.path, "XDG_RUNTIME_DIR": root.appendingPathComponent("run").path,
                "XDG_DATA_HOME": root.appendingPathComponent("data").path,
            ])
            try PrivateFolder.prepare(location.runtimeFolder, purpose: "runtime folder", hint: "")
            try PrivateFolder.prepare(location.dataFolder, purpose: "data folder", hint: "")
            try PrivateFolder.replaceFile(at: location.publishedSocketFile, with: Data(planted.utf8))
            #expect(location.publishedSocketPath() == planted)
            if case .success(let descriptor) = DaemonLauncher.connectToRunning(location) {
                close(descriptor)
                Issue.record("the published path led to another user's daemon")
            }
            child.send(SIGKILL)
            await child.exitStatus()
        }

        /// A client whose runtime folder cannot be used (without `XDG_RUNTIME_DIR`, `/tmp/courier-<uid>`, which
        /// another user can make first; here one that others can write) still reaches the running daemon through
        /// the socket path it published: the folder was checked first, and the client failed without trying.
        @Test func aRuntimeFolderThatCannotBeUsedStillReachesTheRunningDaemon() async throws {
            let fixture = try BackgroundFixture()
            let started = try? BackgroundControl.ask(.status, startingDaemon: true, environment: fixture.environment)
            let open = fixture.root.appendingPathComponent("open-run")
            try? FileManager.default.createDirectory(
                at: open.appendingPathComponent("courier"), withIntermediateDirectories: true)
            chmod(open.path, 0o777)
            chmod(open.appendingPathComponent("courier").path, 0o777)
            var elsewhere = fixture.environment
            elsewhere["XDG_RUNTIME_DIR"] = open.path
            let reply = Result { try BackgroundControl.ask(.status, startingDaemon: true, environment: elsewhere) }
            let daemon = fixture.daemonPID
            await fixture.tearDown()
            guard case .status = started else {
                Issue.record("the daemon did not start")
                return
            }
            guard case .success(.status(let pid, _, _)?) = reply else {
                Issue.record("the running daemon was not reached: \(reply)")
                return
            }
            #expect(pid == daemon)
        }

        /// A background task goes through the proxy the app's environment names, not through the daemon's: the
        /// daemon runs with another process's environment (the first app that started it, or systemd's), so a task
        /// the app meant for its proxy went direct.
        @Test func theAppsProxyVariablesTravelToTheDaemon() throws {
            let configuration = URLSessionConfiguration.ephemeral
            configuration.httpCookieStorage = nil
            configuration.urlCredentialStorage = nil
            configuration.backgroundEnvironment = [
                "https_proxy": "http://app-proxy.example:3128", "no_proxy": "direct.example", "HOME": "/nowhere",
            ]
            let url = try #require(URL(string: "https://files.example/big"))
            let settings = BackgroundSessionClient.settings(configuration, for: url)
            #expect(
                settings.proxyEnvironment == [
                    "https_proxy": "http://app-proxy.example:3128", "no_proxy": "direct.example",
                ])
            let spec = BackgroundTaskSpec(
                task: 1, kind: .download, request: CodableRequest(URLRequest(url: url)), settings: settings)
            let decoded = try JSONDecoder().decode(BackgroundTaskSpec.self, from: JSONEncoder().encode(spec))
            let record = TaskRecord(identifier: "proxied", spec: decoded, now: Date())
            let daemonSide = TransferAttempt.configuration(for: record, folder: FileManager.default.temporaryDirectory)
            let rules = StageSettings(daemonSide).proxyRules
            #expect(rules.proxy(for: url)?.authority == "app-proxy.example:3128")
            #expect(rules.proxy(for: try #require(URL(string: "https://direct.example/"))) == nil)
            // A session with a proxy dictionary sends the dictionary instead.
            configuration.connectionProxyDictionary = [:]
            #expect(BackgroundSessionClient.settings(configuration, for: url).proxyEnvironment == nil)
        }

        /// `httpAdditionalHeaders` values that are not strings (an `NSNumber`, an `Int`) reach the daemon's session as
        /// the in-process session sends them, as their description: the background task had dropped them.
        @Test func nonStringAdditionalHeadersTravelToTheDaemon() throws {
            let configuration = URLSessionConfiguration.ephemeral
            configuration.httpCookieStorage = nil
            configuration.urlCredentialStorage = nil
            configuration.httpAdditionalHeaders = [
                "X-Text": "plain", "X-Count": 3, "X-Number": NSNumber(value: 42),
            ]
            let url = try #require(URL(string: "https://files.example/big"))
            let settings = BackgroundSessionClient.settings(configuration, for: url)
            let spec = BackgroundTaskSpec(
                task: 1, kind: .download, request: CodableRequest(URLRequest(url: url)), settings: settings)
            let decoded = try JSONDecoder().decode(BackgroundTaskSpec.self, from: JSONEncoder().encode(spec))
            let record = TaskRecord(identifier: "headers", spec: decoded, now: Date())
            let daemonSide = TransferAttempt.configuration(for: record, folder: FileManager.default.temporaryDirectory)
            func fields(_ pairs: [(String, String)]) -> [String: String] {
                Dictionary(pairs, uniquingKeysWith: { _, last in last })
            }
            let inProcess = fields(StageSettings(configuration).additionalHeaders)
            #expect(inProcess == ["X-Text": "plain", "X-Count": "3", "X-Number": "42"])
            #expect(fields(StageSettings(daemonSide).additionalHeaders) == inProcess)
        }

        /// `courierMaximumDecompressionRatio` reaches the daemon's session: it kept the default guard whatever the app
        /// set, so a background download the app had turned the guard off for failed with `cannotDecodeContentData`,
        /// and one it had lowered the limit for was held to the default. A spec of an earlier app keeps the default.
        @Test(arguments: [nil, 5, 50_000] as [Int?])
        func theDecompressionGuardTravelsToTheDaemon(ratio: Int?) throws {
            let configuration = URLSessionConfiguration.ephemeral
            configuration.httpCookieStorage = nil
            configuration.urlCredentialStorage = nil
            configuration.courierMaximumDecompressionRatio = ratio
            let url = try #require(URL(string: "https://files.example/big.gz"))
            let spec = BackgroundTaskSpec(
                task: 1, kind: .download, request: CodableRequest(URLRequest(url: url)),
                settings: BackgroundSessionClient.settings(configuration, for: url))
            let decoded = try JSONDecoder().decode(BackgroundTaskSpec.self, from: JSONEncoder().encode(spec))
            let record = TaskRecord(identifier: "ratio", spec: decoded, now: Date())
            let daemonSide = TransferAttempt.configuration(for: record, folder: FileManager.default.temporaryDirectory)
            #expect(daemonSide.courierMaximumDecompressionRatio == ratio)
            #expect(StageSettings(daemonSide).maximumDecompressionRatio == ratio)
        }

        /// The daemon's session for a task has no cache, as the README promises ("background transfers neither read
        /// nor fill it, whatever the cache policy"): each attempt had `.ephemeral`'s 4 MB in-memory cache, that
        /// nothing read, and a cache policy that does not load made an upload fail as a cache miss.
        @Test func theDaemonsSessionHasNoCache() throws {
            let configuration = URLSessionConfiguration.ephemeral
            configuration.httpCookieStorage = nil
            configuration.urlCredentialStorage = nil
            let url = try #require(URL(string: "https://files.example/upload"))
            var request = URLRequest(url: url)
            request.httpMethod = "POST"
            request.cachePolicy = .returnCacheDataDontLoad
            let spec = BackgroundTaskSpec(
                task: 1, kind: .uploadFile("/tmp/body"), request: CodableRequest(request),
                settings: BackgroundSessionClient.settings(configuration, for: url))
            let decoded = try JSONDecoder().decode(BackgroundTaskSpec.self, from: JSONEncoder().encode(spec))
            let record = TaskRecord(identifier: "uncached", spec: decoded, now: Date())
            let daemonSide = TransferAttempt.configuration(for: record, folder: FileManager.default.temporaryDirectory)
            #expect(daemonSide.urlCache == nil)
            #expect(StageSettings(daemonSide).urlCache == nil)
        }

        /// Settings written by an app that did not send the decompression guard keep the default one, never "off".
        @Test func settingsWithoutTheDecompressionGuardKeepTheDefault() throws {
            let earlier = Data(#"{"timeoutIntervalForRequest":60,"timeoutIntervalForResource":60}"#.utf8)
            let settings = try JSONDecoder().decode(BackgroundTransferSettings.self, from: earlier)
            #expect(settings.maximumDecompressionRatio == ContentCoding.defaultMaximumDecompressionRatio)
        }

        /// Transient failures are retried with a doubling delay until the resource deadline; others end the task; a
        /// `5xx` is retried only with a `Retry-After`.
        @Test func theRetryRules() {
            let policy = RetryPolicy(base: 1, maximum: 60)
            let now = Date(timeIntervalSince1970: 1_000_000)
            let far = now.addingTimeInterval(3600)
            #expect(
                policy.delay(
                    after: URLError(.networkConnectionLost), failuresWithoutProgress: 0, now: now, deadline: far)
                    == 1)
            #expect(policy.delay(after: URLError(.timedOut), failuresWithoutProgress: 3, now: now, deadline: far) == 8)
            #expect(
                policy.delay(
                    after: URLError(.cannotConnectToHost), failuresWithoutProgress: 20, now: now, deadline: far)
                    == 60)
            #expect(
                policy.delay(after: URLError(.badServerResponse), failuresWithoutProgress: 0, now: now, deadline: far)
                    == nil)
            #expect(
                policy.delay(after: URLError(.cancelled), failuresWithoutProgress: 0, now: now, deadline: far) == nil)
            #expect(
                policy.delay(
                    after: URLError(.serverCertificateUntrusted), failuresWithoutProgress: 0, now: now, deadline: far)
                    == nil)
            // Past the deadline: the task ends.
            #expect(
                policy.delay(
                    after: URLError(.networkConnectionLost), failuresWithoutProgress: 0, now: now,
                    deadline: now.addingTimeInterval(0.5)) == nil)
            #expect(policy.delay(status: 503, retryAfter: "7", now: now, deadline: far) == 7)
            #expect(
                policy.delay(status: 503, retryAfter: "Mon, 12 Jan 1970 13:47:00 GMT", now: now, deadline: far) == 20)
            #expect(policy.delay(status: 503, retryAfter: nil, now: now, deadline: far) == nil)
            #expect(policy.delay(status: 503, retryAfter: "soon", now: now, deadline: far) == nil)
            #expect(policy.delay(status: 404, retryAfter: "1", now: now, deadline: far) == nil)
            #expect(policy.delay(status: 503, retryAfter: "7200", now: now, deadline: far) == nil)
        }

        /// The journal keeps tasks and events in order, forgets delivered ones, and never reuses a task identifier.
        @Test func theJournalKeepsTasksAndEvents() throws {
            let folder = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: folder) }
            let journal = try BackgroundJournal(
                at: folder.appendingPathComponent("j/journal.sqlite"), logger: Logger(label: "t"))
            #expect(try journal.nextTaskIdentifier(for: "a") == 1)
            try journal.save(JournalTask(identifier: "a", task: 1, finished: false, record: Data("one".utf8)))
            try journal.save(JournalTask(identifier: "b", task: 4, finished: false, record: Data("b4".utf8)))
            let first = try #require(
                try journal.save(
                    JournalTask(identifier: "a", task: 1, finished: true, record: Data("done".utf8)),
                    appending: Data("e1".utf8)))
            #expect(try journal.nextTaskIdentifier(for: "a") == 2)
            #expect(try journal.nextTaskIdentifier(for: "b") == 5)
            #expect(try journal.tasks().map(\.identifier) == ["b"])
            #expect(try journal.tasks(identifier: "a", includingFinished: true).map(\.record) == [Data("done".utf8)])
            #expect(try journal.pendingEvents(identifier: "a").map(\.body) == [Data("e1".utf8)])
            #expect(try journal.pendingEvents(identifier: "b").isEmpty)
            // Another identifier's acknowledgement does not touch it.
            try journal.delivered(sequence: first, identifier: "b")
            #expect(try journal.pendingEvents(identifier: "a").count == 1)
            try journal.delivered(sequence: first, identifier: "a")
            #expect(try journal.pendingEvents(identifier: "a").isEmpty)
            #expect(try journal.tasks(identifier: "a", includingFinished: true).isEmpty)
            // The numbering survives the task's removal.
            #expect(try journal.nextTaskIdentifier(for: "a") == 2)
        }

        /// A crash in the middle of a write (a torn last frame of the write-ahead log, as a `kill -9` or a power cut
        /// leaves it): the journal opens with every transaction committed before it.
        @Test func aTornWriteLosesOnlyTheUnfinishedTransaction() throws {
            let folder = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: folder) }
            let live = folder.appendingPathComponent("live")
            let journal = try BackgroundJournal(
                at: live.appendingPathComponent("journal.sqlite"), logger: Logger(label: "t"))
            try journal.save(JournalTask(identifier: "a", task: 1, finished: false, record: Data("kept".utf8)))
            try journal.save(
                JournalTask(identifier: "a", task: 2, finished: false, record: Data(repeating: 7, count: 20_000)))
            // What the disk holds at the crash: the database and its log, the log's last frame cut short.
            let crash = folder.appendingPathComponent("crash")
            try FileManager.default.createDirectory(
                at: crash, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            for name in ["journal.sqlite", "journal.sqlite-wal"] {
                try FileManager.default.copyItem(
                    at: live.appendingPathComponent(name), to: crash.appendingPathComponent(name))
            }
            let wal = crash.appendingPathComponent("journal.sqlite-wal")
            let size = try #require(try FileManager.default.attributesOfItem(atPath: wal.path)[.size] as? Int)
            #expect(truncate(wal.path, off_t(size - 1000)) == 0)
            let recovered = try BackgroundJournal(
                at: crash.appendingPathComponent("journal.sqlite"), logger: Logger(label: "t"))
            let tasks = try recovered.tasks()
            #expect(tasks.first?.record == Data("kept".utf8))
            #expect(tasks.count == 1)
            // And it takes new writes.
            try recovered.save(JournalTask(identifier: "a", task: 3, finished: false, record: Data("after".utf8)))
            #expect(try recovered.nextTaskIdentifier(for: "a") == 4)
        }

        /// Bytes written but not flushed are trusted only on the boot that wrote them: after a restart of the machine
        /// (a power cut) only the flushed part is continued, never bytes the disk may not hold.
        @Test func theResumeOffsetTrustsUnflushedBytesOnlyOnTheSameBoot() {
            let spec = BackgroundTaskSpec(
                task: 1, kind: .download, request: CodableRequest(URLRequest(url: URL(string: "http://127.0.0.1/x")!)),
                settings: BackgroundTransferSettings(timeoutIntervalForRequest: 60, timeoutIntervalForResource: 60))
            var record = TaskRecord(identifier: "a", spec: spec, now: Date())
            record.partialFileName = "part"
            record.durableBytes = 1_000
            record.writtenBytes = 5_000
            record.writtenBoot = "boot-1"
            #expect(record.resumeOffset(boot: "boot-1") == 5_000)
            #expect(record.resumeOffset(boot: "boot-2") == 1_000)
            #expect(record.resumeOffset(boot: nil) == 1_000)
            record.writtenBytes = 500
            #expect(record.resumeOffset(boot: "boot-1") == 1_000)
            record.forgetPartial()
            #expect(record.resumeOffset(boot: "boot-1") == 0)
            #expect(record.partialFileName == nil && record.entityTag == nil)
            #expect(BootIdentifier.current?.isEmpty == false)
        }

        /// The resume data the daemon continues a download from (each attempt after a transient failure or a crash of
        /// the daemon, and the app's `cancel(byProducingResumeData:)` of a waiting task) keeps the request's
        /// `httpShouldHandleCookies`: it came back `true`, and the continuation of a download the app kept from its
        /// cookies sent them to that host and stored the cookies it set.
        @Test(arguments: [false, true])
        func theDaemonsResumeDataKeepsTheRequestsCookieHandling(handlesCookies: Bool) throws {
            let root = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: root) }
            let location = BackgroundLocation(environment: [
                "HOME": root.path, "XDG_RUNTIME_DIR": root.appendingPathComponent("run").path,
                "XDG_DATA_HOME": root.appendingPathComponent("data").path,
            ])
            // (Not recovered: no timer runs.)
            let daemon = try Daemon(
                location: location, settings: DaemonSettings(environment: [:]), logger: Logger(label: "t"))
            var request = URLRequest(url: URL(string: "http://127.0.0.1/file")!)
            request.httpShouldHandleCookies = handlesCookies
            let spec = BackgroundTaskSpec(
                task: 1, kind: .download, request: CodableRequest(request),
                settings: BackgroundTransferSettings(timeoutIntervalForRequest: 60, timeoutIntervalForResource: 60))
            var record = TaskRecord(identifier: "a", spec: spec, now: Date())
            let folder = root.appendingPathComponent("task-1")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try Data(repeating: 7, count: 1000).write(to: folder.appendingPathComponent("CFNetworkDownload_1.tmp"))
            record.partialFileName = "CFNetworkDownload_1.tmp"
            record.durableBytes = 1000
            record.entityTag = "\"v1\""
            let data = try #require(daemon.durableResumeData(record, folder: folder))
            let resumeData = try ResumeData(decoding: data)
            #expect(resumeData.bytesReceived == 1000)
            #expect(resumeData.originalRequest.httpShouldHandleCookies == handlesCookies)
            #expect(resumeData.currentRequest.httpShouldHandleCookies == handlesCookies)
            #expect(DownloadResumeState.decode(data).request?.httpShouldHandleCookies == handlesCookies)
        }

        /// Resume data the app hands in moves only a download file (`CFNetworkDownload_*.tmp`) that is a regular file
        /// into the new task's folder: not the daemon's own `.kept-partial` of a finished task, not a symbolic link
        /// with a download file's name (a `rename` would move the link, leading the download to its target).
        @Test(arguments: [(".kept-partial", false), ("CFNetworkDownload_1.tmp", true)])
        func onlyADownloadFileIsAdoptedFromResumeData(name: String, asLink: Bool) throws {
            let root = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: root) }
            let location = BackgroundLocation(environment: [
                "HOME": root.path, "XDG_RUNTIME_DIR": root.appendingPathComponent("run").path,
                "XDG_DATA_HOME": root.appendingPathComponent("data").path,
            ])
            let daemon = try Daemon(
                location: location, settings: DaemonSettings(environment: [:]), logger: Logger(label: "t"))
            // A finished task's folder holds the entry the resume data names.
            let finished = location.transferFolder("a", task: 1)
            try FileManager.default.createDirectory(
                at: finished, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let entry = finished.appendingPathComponent(name)
            let elsewhere = root.appendingPathComponent("elsewhere")
            try Data(repeating: 7, count: 1000).write(to: asLink ? elsewhere : entry)
            if asLink {
                try FileManager.default.createSymbolicLink(atPath: entry.path, withDestinationPath: elsewhere.path)
            }
            let url = URL(string: "http://127.0.0.1/file")!
            let stored = try ResumeData.Request(url: url)
            let resumeData = try ResumeData(
                downloadURL: url, bytesReceived: 1000, entityTag: "\"v1\"", serverDownloadDate: nil,
                tempFileName: name, originalRequest: stored, currentRequest: stored
            ).encoded()
            // Not before an hour from now: no attempt starts.
            let spec = BackgroundTaskSpec(
                task: 2, kind: .download, request: CodableRequest(URLRequest(url: url)), resumeData: resumeData,
                earliestBeginDate: Date(timeIntervalSinceNow: 3600),
                settings: BackgroundTransferSettings(timeoutIntervalForRequest: 60, timeoutIntervalForResource: 7200))
            let adopted = daemon.queue.sync {
                daemon.create(spec, in: "a")
                return daemon.records[TaskKey(identifier: "a", task: 2)]?.partialFileName
            }
            #expect(adopted == nil)
            var info = stat()
            #expect(lstat(entry.path, &info) == 0)
            let moved = location.transferFolder("a", task: 2).appendingPathComponent(name)
            #expect(lstat(moved.path, &info) != 0)
        }

        /// A message longer than the peer accepts is never sent: framing it throws, and `send` says so.
        @Test func aMessageTooLongForAFrameIsNotSent() throws {
            let huge = BackgroundRequest.list(
                identifier: String(repeating: "x", count: FrameChannel.maximumFrameLength))
            #expect(throws: FrameChannel.FrameTooLong.self) { try FrameChannel.frame(huge) }
            var ends: [Int32] = [0, 0]
            try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0)
            let left = FrameChannel(descriptor: ends[0], label: "left")
            let right = FrameChannel(descriptor: ends[1], label: "right")
            #expect(!left.sendNow(huge))
            #expect(!left.send(huge))
            // The connection is still good for the next message.
            #expect(left.sendNow(BackgroundRequest.status))
            #expect(right.receive(BackgroundRequest.self) == .status)
        }

        /// Journal rows and messages of a version without the fields added since still decode, with their defaults.
        @Test func rowsOfAnEarlierVersionDecode() throws {
            let spec = BackgroundTaskSpec(
                task: 4, kind: .download, request: CodableRequest(URLRequest(url: URL(string: "http://127.0.0.1/x")!)),
                settings: BackgroundTransferSettings(timeoutIntervalForRequest: 30, timeoutIntervalForResource: 90))
            var record = TaskRecord(identifier: "a", spec: spec, now: Date(timeIntervalSince1970: 1_000))
            record.durableBytes = 77
            var row = try #require(
                JSONSerialization.jsonObject(with: JSONEncoder().encode(record)) as? [String: Any])
            // What an earlier daemon wrote: none of the counters, and settings with only its first fields.
            for key in ["durableBytes", "writtenBytes", "bytesSent", "cancelRequested", "failuresWithoutProgress"] {
                row.removeValue(forKey: key)
            }
            var specRow = try #require(row["spec"] as? [String: Any])
            specRow["settings"] = [
                "timeoutIntervalForRequest": 30, "timeoutIntervalForResource": 90, "additionalHeaders": [[String]](),
                "isDiscretionary": false, "allowsExpensiveNetworkAccess": true,
            ]
            row["spec"] = specRow
            row["aFieldOfALaterVersion"] = "ignored"
            let decoded = try JSONDecoder().decode(TaskRecord.self, from: JSONSerialization.data(withJSONObject: row))
            #expect(decoded.durableBytes == 0 && decoded.bytesSent == 0 && !decoded.cancelRequested)
            #expect(decoded.spec.task == 4 && decoded.spec.settings.timeoutIntervalForResource == 90)
            #expect(decoded.spec.settings.allowsHTTP2 && decoded.spec.settings.maximumConnectionsPerHost == 6)
            #expect(!decoded.spec.settings.usesCookies && decoded.spec.settings.cookies.isEmpty)
            #expect(decoded.spec.settings.credentialFile == nil && decoded.spec.settings.proxyDictionary == nil)
        }

        /// A journal row this version cannot read (a later daemon's: two apps may ship two versions of `courierd`,
        /// and either may be the one started): its finished file is not swept away and its event is not replayed to
        /// an app that, not knowing the task, would acknowledge it — the later daemon still hands both over.
        @Test func rowsOfALaterVersionAreLeftForIt() throws {
            let root = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: root) }
            let location = BackgroundLocation(environment: [
                "HOME": root.path, "XDG_RUNTIME_DIR": root.appendingPathComponent("run").path,
                "XDG_DATA_HOME": root.appendingPathComponent("data").path,
            ])
            let finished = location.sessionFolder("app.later").appendingPathComponent("finished-1.download")
            do {
                let journal = try BackgroundJournal(at: location.journal, logger: Logger(label: "t"))
                let event = try JSONEncoder().encode(
                    BackgroundEvent.Kind.completed(BackgroundOutcome(file: finished.path)))
                try journal.save(
                    JournalTask(
                        identifier: "app.later", task: 1, finished: true,
                        record: Data(#"{"aRecordOfALaterVersion":true}"#.utf8)),
                    appending: event)
            }
            try PrivateFolder.prepare(location.sessionFolder("app.later"), purpose: "session folder", hint: "")
            try Data("the later daemon's download".utf8).write(to: finished)
            // (The daemon's idle timer runs on in the test process: an idle timeout it never reaches.)
            let daemon = try Daemon(
                location: location, settings: DaemonSettings(environment: ["COURIERD_IDLE_TIMEOUT": "1000000"]),
                logger: Logger(label: "t"))
            daemon.recover()
            var ends: [Int32] = [0, 0]
            try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0)
            let app = FrameChannel(descriptor: ends[0], label: "app")
            let client = daemon.connected(FrameChannel(descriptor: ends[1], label: "daemon"))
            daemon.received(
                .attach(identifier: "app.later", processID: getpid(), reattaching: false, launch: nil), from: client)
            app.setReceiveTimeout(seconds: 2)
            guard case .attached(_, let tasks) = app.receive(BackgroundReply.self) else {
                Issue.record("the daemon did not answer the attach")
                return
            }
            #expect(tasks.isEmpty)
            // Nothing more (waits 2 s, long enough for the sweep `recover` started).
            #expect(app.receive(BackgroundReply.self) == nil)
            #expect(FileManager.default.fileExists(atPath: finished.path))
        }

        /// `sessionSendsLaunchEvents = false` turns launches off, also the command an earlier launch of the app
        /// registered: the daemon kept that one (as it must for a session that names none, such as `courier queue
        /// wait`) and ran it whenever a task ended with no process attached.
        @Test func launchEventsTurnedOffForgetTheRegisteredCommand() throws {
            let root = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: root) }
            let location = BackgroundLocation(environment: [
                "HOME": root.path, "XDG_RUNTIME_DIR": root.appendingPathComponent("run").path,
                "XDG_DATA_HOME": root.appendingPathComponent("data").path,
            ])
            // (Not recovered: no timer runs.)
            let daemon = try Daemon(
                location: location, settings: DaemonSettings(environment: [:]), logger: Logger(label: "t"))
            /// A process with a session of `configuration` attaches and leaves; whether a command is registered then.
            func attachAndLeave(_ configuration: URLSessionConfiguration) -> Bool? {
                var ends: [Int32] = [0, 0]
                guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0 else { return nil }
                let app = FrameChannel(descriptor: ends[0], label: "app")
                let client = daemon.connected(FrameChannel(descriptor: ends[1], label: "daemon"))
                // What `URLSession` sends for the configuration.
                let launch = BackgroundLaunch(
                    command: configuration.courierBackgroundLaunchCommand,
                    sendsLaunchEvents: configuration.sessionSendsLaunchEvents)
                daemon.received(
                    .attach(identifier: "app.quiet", processID: getpid(), reattaching: false, launch: launch),
                    from: client)
                app.setReceiveTimeout(seconds: 5)
                guard case .attached(_, _) = app.receive(BackgroundReply.self) else { return nil }
                daemon.disconnected(client)
                let registered: Bool = daemon.queue.sync {
                    guard let data = try? daemon.journal.launch(for: "app.quiet"),
                        let launch = try? JSONDecoder().decode(BackgroundLaunch.self, from: data)
                    else { return false }
                    return launch.command.first != nil
                }
                return registered
            }
            let launching = URLSessionConfiguration.background(withIdentifier: "app.quiet")
            launching.courierBackgroundLaunchCommand = ["/bin/true"]
            #expect(attachAndLeave(launching) == true)
            // A session naming no command keeps the registered one.
            #expect(attachAndLeave(.background(withIdentifier: "app.quiet")) == true)
            let quiet = URLSessionConfiguration.background(withIdentifier: "app.quiet")
            quiet.courierBackgroundLaunchCommand = ["/bin/true"]
            quiet.sessionSendsLaunchEvents = false
            #expect(attachAndLeave(quiet) == false)
            #expect(attachAndLeave(.background(withIdentifier: "app.quiet")) == false)
        }

        /// A process started detached gets none of its starter's descriptors but standard input, output and error,
        /// even one opened without close-on-exec.
        @Test func aDetachedProcessInheritsNoDescriptors() async throws {
            let folder = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: folder) }
            let inherited = open("/dev/null", O_RDONLY)
            try #require(inherited >= 0)
            // A high number that is free: another test's socket may hold any given one.
            let high = inheritableDuplicate(of: inherited, atLeast: 200)
            close(inherited)
            try #require(high >= 200)
            defer { close(high) }
            let listing = folder.appendingPathComponent("fds")
            try DetachedProcess.spawn(
                "/bin/sh",
                arguments: [
                    "-c", "ls /proc/self/fd > '\(listing.path).tmp' && mv '\(listing.path).tmp' '\(listing.path)'",
                ],
                environment: ["PATH": "/usr/bin:/bin"], log: nil)
            var names: [String] = []
            for _ in 0..<500 {
                if let text = try? String(contentsOf: listing, encoding: .utf8) {
                    names = text.split(separator: "\n").map(String.init)
                    break
                }
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(names.contains("0") && names.contains("1") && names.contains("2"), "\(names)")
            #expect(!names.contains("\(high)"), "\(names)")
        }

        /// The high descriptor the test above leaves open for the child is a free number, never one that is open: the
        /// test used to `dup2` onto 200, which closed whatever another test (an event loop's listener) had there, and
        /// its own `close` then closed that number a second time; SwiftNIO stopped the suite with `EBADF` in
        /// `epoll_ctl` as the listener closed.
        @Test func anInheritableDuplicateNeverReplacesAnOpenDescriptor() throws {
            let null = open("/dev/null", O_RDONLY | O_CLOEXEC)
            try #require(null >= 0)
            defer { close(null) }
            // Stands for another test's socket at the number asked for.
            let occupant = fcntl(null, F_DUPFD_CLOEXEC, 200)
            try #require(occupant >= 200)
            defer { close(occupant) }
            let zero = open("/dev/zero", O_RDONLY | O_CLOEXEC)
            try #require(zero >= 0)
            defer { close(zero) }
            let duplicate = inheritableDuplicate(of: zero, atLeast: occupant)
            defer { if duplicate >= 0 && duplicate != occupant { close(duplicate) } }
            #expect(duplicate > occupant)
            // The occupant still names /dev/null, and the duplicate /dev/zero, inheritable.
            var nullInfo = stat()
            var occupantInfo = stat()
            var zeroInfo = stat()
            var duplicateInfo = stat()
            try #require(fstat(null, &nullInfo) == 0)
            try #require(fstat(zero, &zeroInfo) == 0)
            let occupantOpen = fstat(occupant, &occupantInfo) == 0
            let duplicateOpen = fstat(duplicate, &duplicateInfo) == 0
            #expect(occupantOpen && occupantInfo.st_rdev == nullInfo.st_rdev)
            #expect(duplicateOpen && duplicateInfo.st_rdev == zeroInfo.st_rdev)
            #expect(fcntl(duplicate, F_GETFD) & FD_CLOEXEC == 0)
        }
    }
}
