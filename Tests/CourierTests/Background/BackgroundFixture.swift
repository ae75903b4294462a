import CourierMockServer
import CourierTestSupport
import Foundation
import Synchronization
import Testing

@testable import Courier

#if canImport(Glibc)
    import Glibc
#endif

/// A daemon and folders of a test's own: background sessions made here start the built `courierd` with runtime and
/// data folders in a temporary directory, short timers, and nothing shared with other tests. `tearDown()` kills
/// the daemon and removes the folders.
final class BackgroundFixture: Sendable {
    let root: URL
    let environment: [String: String]

    init(idleTimeout: Double = 20) throws {
        root = try makeTemporaryDirectory()
        let daemon = courierBinary().deletingLastPathComponent().appendingPathComponent("courierd")
        environment = [
            "HOME": root.path,
            "PATH": "/usr/bin:/bin",
            "XDG_RUNTIME_DIR": root.appendingPathComponent("run").path,
            "XDG_DATA_HOME": root.appendingPathComponent("data").path,
            "COURIERD_PATH": daemon.path,
            "COURIERD_IDLE_TIMEOUT": "\(idleTimeout)",
            "COURIERD_RETRY_BASE": "0.05",
            "COURIERD_RETRY_MAX": "0.5",
            // A durable checkpoint every MiB, so that a test stopping the daemon a few MiB in finds one.
            "COURIERD_CHECKPOINT_BYTES": "\(1 << 20)",
        ]
    }

    func configuration(_ identifier: String) -> URLSessionConfiguration {
        let configuration = URLSessionConfiguration.background(withIdentifier: identifier)
        configuration.backgroundEnvironment = environment
        return configuration
    }

    /// A background session (made on a thread of its own: attaching blocks until the daemon answers).
    func session(_ identifier: String, delegate: BackgroundRecorder) async -> URLSession {
        await session(configuration(identifier), delegate: delegate)
    }

    /// A background session with a configuration made by ``configuration(_:)`` and changed by the test.
    func session(_ configuration: URLSessionConfiguration, delegate: BackgroundRecorder) async -> URLSession {
        await onOwnThread { URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil) }
    }

    /// The running daemon's process identifier, from its pid file.
    var daemonPID: pid_t? {
        let file = root.appendingPathComponent("run/courier/courierd.pid")
        guard let text = try? String(contentsOf: file, encoding: .utf8) else { return nil }
        return pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Waits until the daemon has no client but the one asking (a detached session's connection is gone); records
    /// an issue if that does not happen within about five seconds.
    func waitForNoClients(sourceLocation: SourceLocation = #_sourceLocation) async {
        let environment = self.environment
        for _ in 0..<500 {
            let reply = await onOwnThread { try? BackgroundControl.ask(.status, environment: environment) }
            if case .status(_, _, let clients) = reply, clients <= 1 { return }
            try? await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("the daemon still had other clients", sourceLocation: sourceLocation)
    }

    /// Waits until the daemon lists `task` of `identifier` as completed (it ran with no app attached); records an
    /// issue if it does not within about ten seconds.
    func waitUntilCompleted(_ identifier: String, task: Int, sourceLocation: SourceLocation = #_sourceLocation) async {
        let environment = self.environment
        for _ in 0..<1000 {
            let reply = await onOwnThread {
                try? BackgroundControl.ask(.list(identifier: identifier), environment: environment)
            }
            if case .listed(let tasks) = reply, tasks.first(where: { $0.task == task })?.state == .completed { return }
            try? await Task.sleep(for: .milliseconds(10))
        }
        Issue.record(
            "the daemon never listed task \(task) of \(identifier) as completed", sourceLocation: sourceLocation)
    }

    /// The session folder where the daemon keeps `identifier`'s files.
    func sessionFolder(_ identifier: String) -> URL {
        root.appendingPathComponent("data/courier/background").appendingPathComponent(identifier)
    }

    /// Kills the daemon (`SIGKILL`) and waits until it is gone.
    func killDaemon() async {
        guard let pid = daemonPID else { return }
        kill(pid, SIGKILL)
        for _ in 0..<200 where kill(pid, 0) == 0 {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    func tearDown() async {
        await killDaemon()
        try? FileManager.default.removeItem(at: root)
    }

    /// The daemon's log, for failure messages.
    var daemonLog: String {
        (try? String(contentsOf: root.appendingPathComponent("run/courier/courierd.log"), encoding: .utf8)) ?? ""
    }
}

/// Runs `body` with a daemon fixture of its own and a mock server. The daemon is killed and the folders removed
/// however `body` ends — a failed `#require` included, which would otherwise leave a `courierd` running.
func withBackgroundServer(_ body: (BackgroundFixture, MockServer) async throws -> Void) async throws {
    let fixture = try BackgroundFixture()
    do {
        try await withServer { server in try await body(fixture, server) }
    } catch {
        await fixture.tearDown()
        throw error
    }
    await fixture.tearDown()
}

/// A background session's delegate that writes down every call, in order, and keeps each finished download's bytes.
final class BackgroundRecorder: NSObject, URLSessionDownloadDelegate, URLSessionDataDelegate, Sendable {
    struct Finished: Sendable {
        var task: Int
        var bytes: Data
        var path: String
    }

    private struct State {
        var events: [String] = []
        var finished: [Finished] = []
        var errors: [Int: URLError?] = [:]
        var bytesWritten: [Int: Int64] = [:]
        var received: [Int: Data] = [:]
        var drained = 0
    }

    private let state = Mutex(State())
    /// What the delegate answers to an authentication challenge (`nil`: default handling).
    let credential: URLCredential?
    private let challenges = Mutex<[String]>([])

    init(credential: URLCredential? = nil) {
        self.credential = credential
    }

    /// The challenges the delegate was asked about: "host realm failures".
    var challengesSeen: [String] { challenges.withLock { $0 } }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        let space = challenge.protectionSpace
        challenges.withLock {
            $0.append("\(space.host) \(space.realm ?? "-") \(challenge.previousFailureCount)")
        }
        if let credential, challenge.previousFailureCount == 0 {
            completionHandler(.useCredential, credential)
        } else {
            completionHandler(.performDefaultHandling, nil)
        }
    }

    var events: [String] { state.withLock { $0.events } }
    var finished: [Finished] { state.withLock { $0.finished } }
    var errors: [Int: URLError?] { state.withLock { $0.errors } }
    var drainedCount: Int { state.withLock { $0.drained } }
    func bytesWritten(_ task: Int) -> Int64 { state.withLock { $0.bytesWritten[task] ?? 0 } }
    /// The body an upload task received (`didReceive` data).
    func received(_ task: Int) -> Data? { state.withLock { $0.received[task] } }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        state.withLock { state in
            state.events.append("data \(dataTask.taskIdentifier)")
            state.received[dataTask.taskIdentifier, default: Data()].append(data)
        }
    }

    func urlSession(
        _ session: URLSession, downloadTask: URLSessionDownloadTask, didWriteData bytesWritten: Int64,
        totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64
    ) {
        state.withLock { $0.bytesWritten[downloadTask.taskIdentifier] = totalBytesWritten }
    }

    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
        let bytes = (try? Data(contentsOf: location)) ?? Data()
        state.withLock { state in
            state.events.append("finished \(downloadTask.taskIdentifier)")
            state.finished.append(Finished(task: downloadTask.taskIdentifier, bytes: bytes, path: location.path))
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        state.withLock { state in
            state.events.append("completed \(task.taskIdentifier) \((error as? URLError)?.code.rawValue ?? 0)")
            state.errors[task.taskIdentifier] = error as? URLError
        }
    }

    func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession) {
        state.withLock { state in
            state.events.append("drained")
            state.drained += 1
        }
    }

    /// Waits until `count` tasks completed; records an issue if `timeout` passes first, so that checks after the
    /// wait (often over the completions seen) never pass on too few.
    func waitForCompletions(
        _ count: Int, timeout: Duration = .seconds(60), sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        let deadline = ContinuousClock.now + timeout
        while state.withLock({ $0.errors.count }) < count {
            guard ContinuousClock.now < deadline else {
                let seen = state.withLock { $0.errors.count }
                Issue.record(
                    "\(seen) of \(count) background tasks completed in \(timeout)", sourceLocation: sourceLocation)
                return
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }
}

/// Whether two bodies are equal, as a plain `Bool`: an `#expect(a == b)` on megabytes of data would make Swift
/// Testing compute their difference when it fails, which takes minutes.
func bytesAre(_ received: Data, _ expected: Data) -> Bool {
    received == expected
}

/// Every background-session suite, one after another: each starts daemons and child processes, and together they
/// loaded the two cores enough to upset other suites' timing.
@Suite("Background sessions", .serialized)
enum BackgroundSuites {}
