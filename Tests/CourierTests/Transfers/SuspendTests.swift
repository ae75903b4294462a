import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

@Suite("Suspend, resume and Progress")
struct SuspendTests {
    @Test(arguments: WireProtocol.allCases)
    func suspendingBeforeTheResponseArrivesIsAllowed(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            var slow = MockResponse.ok(Data(repeating: 4, count: 50_000))
            slow.headDelay = .milliseconds(50)
            server.route("/s", response: slow)
            let delegate = RecordingDelegate()
            let session = makeSession(delegate: delegate)
            let task = session.dataTask(with: server.url("/s"))
            task.resume()
            task.suspend()
            #expect(task.state == .suspended)
            try await Task.sleep(for: .milliseconds(200))
            #expect(!delegate.events.contains(.complete(nil)))
            task.resume()
            await delegate.waitForCompletions()
            #expect(delegate.body == Data(repeating: 4, count: 50_000))
            #expect(server.requests(path: "/s").count == 1)
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func noTimerFiresWhileSuspended(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            // 2 s of trickling (20 parts, 100 ms apart), so the suspension surely lands mid-body even on a busy
            // machine.
            var throttled = MockResponse.ok(Data(repeating: 5, count: 200_000))
            throttled.chunkSize = 10_000
            throttled.chunkDelay = .milliseconds(100)
            server.route("/t", response: throttled)
            let delegate = RecordingDelegate()
            let session = makeSession(delegate: delegate) { configuration in
                configuration.timeoutIntervalForRequest = 1
                configuration.timeoutIntervalForResource = 3
            }
            // The connection (for h2 also its TLS handshake and SETTINGS) is made ahead, so that a loaded machine
            // does not spend the 1 s request timeout on it.
            server.route("/warm", response: .ok("w"))
            // A warm-up that runs out of time on a very busy machine still leaves its connection in the pool once it
            // opens: a later attempt finds it. Attempts go on for up to a minute (the whole suite running at once
            // on two cores once kept six attempts in a row from connecting within the 1 s request timeout).
            let warmUpEnds = ContinuousClock.now + .seconds(60)
            var warmed = await session.runDataTask(server.url("/warm"))
            while warmed.error != nil, ContinuousClock.now < warmUpEnds {
                warmed = await session.runDataTask(server.url("/warm"))
            }
            try #require(warmed.error == nil, "the warm-up failed: \(String(describing: warmed.error))")
            let isCompletion: (RecordingDelegate.Event) -> Bool = { if case .complete = $0 { true } else { false } }
            // On a loaded machine the request timeout may end a task before its first data: it then completes
            // instead of suspending, and another task tries, for up to a minute (a run of the whole suite
            // once had three attempts in a row time out), rather than the test waiting forever.
            var task: URLSessionDataTask?
            var completionsBefore = 0
            // When the task that got suspended started, and when it was suspended: the time it ran in between counts
            // against its resource timeout.
            var started = ContinuousClock.now
            let suspendedAt = NIOLockedValueBox<ContinuousClock.Instant?>(nil)
            let attemptsEnd = ContinuousClock.now + .seconds(60)
            while task == nil, ContinuousClock.now < attemptsEnd {
                let events = delegate.events.count
                completionsBefore = delegate.events.filter(isCompletion).count
                let suspended = AsyncFlag()
                delegate.onFirstData = { task in
                    task.suspend()
                    suspendedAt.withLockedValue { $0 = .now }
                    suspended.set()
                }
                let attempt = session.dataTask(with: server.url("/t"))
                started = ContinuousClock.now
                attempt.resume()
                while !suspended.isSet, !delegate.events.dropFirst(events).contains(where: isCompletion) {
                    try await Task.sleep(for: .milliseconds(5))
                }
                if suspended.isSet { task = attempt }
            }
            let suspendedTask = try #require(task, "every task ended before its first data: \(delegate.events)")
            // Longer than both timeouts: neither may fire while the task is suspended.
            try await Task.sleep(for: .milliseconds(3200))
            #expect(suspendedTask.state == .suspended)
            let resumed = ContinuousClock.now
            suspendedTask.resume()
            await delegate.waitForCompletions(completionsBefore + 1)
            if delegate.events.last == .complete(.timedOut) {
                // Only a loaded machine gets here: one slow to deliver the first data (the task's clock ran meanwhile)
                // or stalled after the resume. Both clocks start again at the resume: the request timeout grants its
                // whole 1 s, the resource timeout the rest of its 3 s, and the shorter of the two ends the task, no
                // sooner. (Once the request timeout came 1.0 s after the resume, sooner than the resource's rest: that
                // is right.) Had either clock counted the suspension (3.2 s), the task would have ended while
                // suspended, checked above. A quarter of a second allows for the suspension reaching the engine late
                // (the resource clock then ran a little longer than the test saw).
                let ranBefore = try #require(suspendedAt.withLockedValue { $0 }) - started
                let owed = min(.seconds(1), .seconds(3) - ranBefore) - .milliseconds(250)
                #expect(
                    ContinuousClock.now - resumed >= owed, "the suspension was counted (ran \(ranBefore) before it)")
            } else {
                #expect(delegate.events.last == .complete(nil))
                #expect(delegate.body.count == 200_000)
            }
        }
    }

    /// `suspend()` stops a whole transfer, the request's body included: a file upload suspended as it starts sends
    /// (and reports) nothing more until `resume()`, then arrives whole. Before the fix the body kept streaming from
    /// the file to the server while the task said `.suspended`.
    @Test(arguments: WireProtocol.allCases)
    func suspendingAnUploadStopsItsBody(over wire: WireProtocol) async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // Far more than a second of loopback can carry once suspended, were the body still sent.
        let length = 64 << 20
        let (file, digest) = try writePatternFile(length: length, in: directory)
        try await withServer(wire) { server in
            server.route("/up", method: "PUT", response: .status(204))
            var request = URLRequest(url: server.url("/up"))
            request.httpMethod = "PUT"
            let delegate = RecordingDelegate()
            let session = makeSession(delegate: delegate)
            let task = session.uploadTask(with: request, fromFile: file)
            task.resume()
            task.suspend()
            // The suspension reaches the connection within a chunk or two of the body, however loaded the machine.
            try await Task.sleep(for: .seconds(1))
            let sentWhileSuspended = task.countOfBytesSent
            try await Task.sleep(for: .milliseconds(500))
            #expect(task.state == .suspended)
            #expect(sentWhileSuspended < Int64(length))
            #expect(task.countOfBytesSent == sentWhileSuspended)
            task.resume()
            await delegate.waitForCompletions()
            #expect(delegate.events.last == .complete(nil))
            #expect(task.countOfBytesSent == Int64(length))
            let recorded = try #require(server.requests(path: "/up").first)
            #expect(recorded.bodyLength == length)
            #expect(recorded.bodySHA256 == digest)
        }
    }

    /// The same for a body in memory (`uploadTask(with:from:)`): it was handed to the connection whole as the request
    /// started, and kept going out, over HTTP/2 as the server's flow-control windows opened, while the task said
    /// `.suspended`.
    @Test(arguments: WireProtocol.allCases)
    func suspendingADataUploadStopsItsBody(over wire: WireProtocol) async throws {
        // Far more than a second of loopback can carry once suspended, were the body still sent.
        let length = 64 << 20
        let body = MockBody.patternBytes(offset: 0, count: length)
        try await withServer(wire) { server in
            server.route("/up", method: "PUT", response: .status(204))
            var request = URLRequest(url: server.url("/up"))
            request.httpMethod = "PUT"
            let delegate = RecordingDelegate()
            let session = makeSession(delegate: delegate)
            let task = session.uploadTask(with: request, from: body)
            task.resume()
            task.suspend()
            // The suspension reaches the connection within a chunk or two of the body, however loaded the machine.
            try await Task.sleep(for: .seconds(1))
            let sentWhileSuspended = task.countOfBytesSent
            try await Task.sleep(for: .milliseconds(500))
            #expect(task.state == .suspended)
            #expect(sentWhileSuspended < Int64(length))
            #expect(task.countOfBytesSent == sentWhileSuspended)
            task.resume()
            await delegate.waitForCompletions()
            #expect(delegate.events.last == .complete(nil))
            #expect(task.countOfBytesSent == Int64(length))
            let recorded = try #require(server.requests(path: "/up").first)
            #expect(recorded.bodyLength == length)
            #expect(recorded.bodySHA256 == sha256Hex(body))
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func progressPauseAndResumeSuspendAndResumeTheTask(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            var throttled = MockResponse.ok(Data(repeating: 6, count: 200_000))
            throttled.chunkSize = 10_000
            throttled.chunkDelay = .milliseconds(50)
            server.route("/p", response: throttled)
            let delegate = RecordingDelegate()
            let session = makeSession(delegate: delegate)
            let task = session.dataTask(with: server.url("/p"))
            task.resume()
            #expect(task.progress.isPausable)
            #expect(task.progress.isCancellable)
            // Progress runs its handlers asynchronously (on Darwin too): wait for each to take effect.
            task.progress.pause()
            for _ in 0..<200 where task.state != .suspended { try await Task.sleep(for: .milliseconds(5)) }
            #expect(task.state == .suspended)
            task.progress.resume()
            for _ in 0..<200 where task.state == .suspended { try await Task.sleep(for: .milliseconds(5)) }
            // Running again (or, on a slow machine, already done: it was resumed either way).
            #expect(task.state != .suspended)
            await delegate.waitForCompletions()
            #expect(task.progress.completedUnitCount == 200_000)
            #expect(task.progress.totalUnitCount == 200_000)
            #expect(task.progress.isFinished)
        }
    }

    /// `Progress.pause()` calls its handler on every call, also when paused already, and runs handlers on a
    /// concurrent queue: with suspensions that nest, the progress must hold at most one of them, or two `pause()`
    /// calls and one `resume()` would leave the task suspended while its progress says it runs.
    @Test func aProgressHoldsAtMostOneSuspension() async throws {
        try await withServer { server in
            server.route("/quiet", response: .silent)
            let session = makeSession()
            defer { session.invalidateAndCancel() }
            let task = session.dataTask(with: server.url("/quiet"))
            task.resume()
            task.progress.pause()
            task.progress.pause()
            for _ in 0..<200 where task.state != .suspended { try await Task.sleep(for: .milliseconds(5)) }
            #expect(task.state == .suspended)
            task.progress.resume()
            for _ in 0..<200 where task.state != .running { try await Task.sleep(for: .milliseconds(5)) }
            #expect(task.state == .running)
            // Quick turns, handled in any order, end as the progress ends: running.
            for _ in 0..<20 {
                task.progress.pause()
                task.progress.resume()
            }
            for _ in 0..<200 where task.state != .running { try await Task.sleep(for: .milliseconds(5)) }
            try await Task.sleep(for: .milliseconds(100))
            #expect(task.state == .running)
            #expect(!task.progress.isPaused)
            task.cancel()
        }
    }
}
