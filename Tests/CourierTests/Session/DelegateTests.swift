import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

@Suite("Delegates, task lifecycle and invalidation")
struct DelegateTests {
    @Test func delegateEventsArriveInOrderOnTheDelegateQueue() async throws {
        try await withServer { server in
            server.route("/d", response: .ok(Data(repeating: 1, count: 300_000)))
            let delegate = RecordingDelegate()
            let queue = OperationQueue()
            queue.maxConcurrentOperationCount = 1
            delegate.expectedQueue = queue
            let session = makeSession(delegate: delegate, queue: queue)
            let task = session.dataTask(with: server.url("/d"))
            // didCreateTask is synchronous: already recorded when the factory returns.
            #expect(delegate.events == [.created(task.taskIdentifier)])
            #expect(task.state == .suspended, "\(String(describing: task.error))")
            task.resume()
            await delegate.waitForCompletions()
            let events = delegate.events
            #expect(events.first == .created(task.taskIdentifier))
            #expect(events[1] == .response(200))
            #expect(events.last == .complete(nil))
            #expect(delegate.dataBytes == 300_000)
            #expect(delegate.body == Data(repeating: 1, count: 300_000))
            #expect(delegate.callsOffQueue == 0)
            #expect(task.state == .completed)
            #expect(task.countOfBytesReceived == 300_000)
            #expect(task.countOfBytesExpectedToReceive == 300_000)
            #expect(task.progress.completedUnitCount == 300_000)
            #expect(task.progress.totalUnitCount == 300_000)
            #expect(task.error == nil)
            session.finishTasksAndInvalidate()
        }
    }

    @Test func responseDispositionCancelEndsWithCancelled() async throws {
        try await withServer { server in
            server.route("/d", response: .ok("never read"))
            let delegate = RecordingDelegate()
            delegate.disposition = .cancel
            let session = makeSession(delegate: delegate)
            let task = session.dataTask(with: server.url("/d"))
            task.resume()
            await delegate.waitForCompletions()
            #expect(delegate.events.last == .complete(.cancelled))
            #expect(delegate.dataBytes == 0)
            #expect((task.error as? URLError)?.code == .cancelled)
        }
    }

    @Test func completionHandlerReplacesResponseAndDataDelegateCalls() async throws {
        try await withServer { server in
            server.route("/d", response: .ok("body"))
            let delegate = RecordingDelegate()
            let session = makeSession(delegate: delegate)
            let outcome = await session.runDataTask(URLRequest(url: server.url("/d")))
            #expect(outcome.data == Data("body".utf8))
            let events = delegate.events
            #expect(events.count == 1)
            #expect(events.first.map { if case .created = $0 { return true } else { return false } } == true)
        }
    }

    @Test func taskIdentifiersAreUniqueAndStatesProgress() async throws {
        let session = makeSession()
        let url = try #require(URL(string: "http://127.0.0.1:9/"))
        let tasks = (0..<20).map { _ in session.dataTask(with: url) }
        #expect(Set(tasks.map(\.taskIdentifier)).count == 20)
        #expect(tasks.allSatisfy { $0.state == .suspended })
        #expect(tasks[0].originalRequest?.url == url)
        #expect(tasks[0].currentRequest?.url == url)
        #expect(tasks[0].response == nil)
        for task in tasks { task.cancel() }
        #expect(tasks.allSatisfy { $0.state == .completed })
    }

    @Test func cancellingASuspendedTaskCompletesWithCancelled() async throws {
        let session = makeSession()
        let url = try #require(URL(string: "http://127.0.0.1:9/never"))
        let outcome: DataOutcome = await withCheckedContinuation { continuation in
            let task = session.dataTask(with: url) { data, response, error in
                continuation.resume(
                    returning: DataOutcome(data: data, response: response, error: error, onDelegateQueue: true))
            }
            task.cancel()
        }
        #expect(outcome.urlError?.code == .cancelled)
        #expect(outcome.urlError?.userInfo[NSURLErrorFailingURLErrorKey] as? URL == url)
        #expect(outcome.data == nil)
    }

    @Test func cancellingARunningTaskCancelsTheTransfer() async throws {
        try await withServer { server in
            // The answer would take 30 s; the cancel after 0.1 s ends the task long before, even on a machine that
            // stalls the test for seconds (a fresh-clone CI run took 4.8 s against a 5 s delay).
            server.route("/slow", response: .delayed("late", by: .seconds(30)))
            let session = makeSession()
            let started = ContinuousClock.now
            let outcome = await session.runDataTask(URLRequest(url: server.url("/slow"))) { task in
                DispatchQueue.global().asyncAfter(deadline: .now() + 0.1) { task.cancel() }
            }
            #expect(outcome.urlError?.code == .cancelled)
            #expect(ContinuousClock.now - started < .seconds(15))
        }
    }

    @Test func finishTasksAndInvalidateWaitsForRunningTasks() async throws {
        try await withServer { server in
            server.route("/slow", response: .delayed("done", by: .milliseconds(100)))
            let delegate = RecordingDelegate()
            let session = makeSession(delegate: delegate)
            session.dataTask(with: server.url("/slow")).resume()
            session.finishTasksAndInvalidate()
            await delegate.waitForCompletions(2)
            #expect(delegate.events.suffix(2) == [.complete(nil), .invalid])
            // The session lets go of its delegate right after didBecomeInvalidWithError returns.
            for _ in 0..<100 where session.delegate != nil {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(session.delegate == nil)
        }
    }

    @Test func invalidateAndCancelCancelsRunningTasks() async throws {
        try await withServer { server in
            // Never answered (a delayed answer could arrive first on a machine that stalls for seconds: ci failed so).
            server.route("/slow", response: .silent)
            let delegate = RecordingDelegate()
            let session = makeSession(delegate: delegate)
            session.dataTask(with: server.url("/slow")).resume()
            session.dataTask(with: server.url("/slow")).resume()
            try await waitUntil { server.requests(path: "/slow").count == 2 }
            session.invalidateAndCancel()
            await delegate.waitForCompletions(3)
            let events = delegate.events
            #expect(events.filter { $0 == .complete(.cancelled) }.count == 2)
            #expect(events.last == .invalid)
        }
    }

    @Test func aTaskOnAnInvalidatedSessionCompletesWithAnError() async throws {
        let session = makeSession()
        session.finishTasksAndInvalidate()
        let url = try #require(URL(string: "http://127.0.0.1:9/"))
        let outcome = await session.runDataTask(url)
        #expect(outcome.urlError?.code == .cancelled)
    }

    @Test func sharedSessionIgnoresInvalidation() async throws {
        try await withServer { server in
            server.route("/s", response: .ok("shared"))
            URLSession.shared.finishTasksAndInvalidate()
            URLSession.shared.invalidateAndCancel()
            let (data, _) = try await URLSession.shared.data(from: server.url("/s"))
            #expect(data == Data("shared".utf8))
        }
    }

    @Test func configurationIsCopiedAtCreation() async throws {
        let configuration = URLSessionConfiguration.default
        configuration.timeoutIntervalForRequest = 12
        let session = URLSession(configuration: configuration)
        configuration.timeoutIntervalForRequest = 99
        #expect(session.configuration.timeoutIntervalForRequest == 12)
        session.configuration.timeoutIntervalForRequest = 50
        #expect(session.configuration.timeoutIntervalForRequest == 12)
    }

    @Test func taskListsReportUnfinishedTasks() async throws {
        let server = MockServer()
        try await server.start()
        server.route("/silent", response: .silent)
        let session = makeSession()
        let url = server.url("/silent")
        let first = session.dataTask(with: url)
        let second = session.dataTask(with: url)
        // As on Darwin, a task is listed from its first resume().
        #expect(await session.allTasks.isEmpty)
        first.resume()
        second.resume()
        #expect(await session.allTasks.map(\.taskIdentifier) == [first.taskIdentifier, second.taskIdentifier])
        let kinds: (Int, Int, Int) = await withCheckedContinuation { continuation in
            session.getTasksWithCompletionHandler { data, uploads, downloads in
                continuation.resume(returning: (data.count, uploads.count, downloads.count))
            }
        }
        #expect(kinds == (2, 0, 0))
        first.cancel()
        second.cancel()
        #expect(await session.allTasks.isEmpty)
        try await server.shutdown()
    }

    @Test func progressCancelCancelsTheTask() async throws {
        try await withServer { server in
            server.route("/slow", response: .silent)
            let outcome = await makeSession().runDataTask(URLRequest(url: server.url("/slow"))) { task in
                DispatchQueue.global().asyncAfter(deadline: .now() + 0.1) { task.progress.cancel() }
            }
            #expect(outcome.urlError?.code == .cancelled)
        }
    }

    @Test func suspendAndResumeMidBodyKeepsOneRequest() async throws {
        try await withServer { server in
            // 2 s of trickling, so the suspension lands mid-body even on a busy machine.
            var throttled = MockResponse.ok(Data(repeating: 9, count: 200_000))
            throttled.chunkSize = 10_000
            throttled.chunkDelay = .milliseconds(100)
            server.route("/t", response: throttled)
            let delegate = RecordingDelegate()
            let suspended = delegate.suspendingAtFirstData()
            let session = makeSession(delegate: delegate)
            let task = session.dataTask(with: server.url("/t"))
            task.resume()
            await suspended.wait()
            #expect(task.state == .suspended)
            try await Task.sleep(for: .milliseconds(200))
            task.resume()
            await delegate.waitForCompletions()
            #expect(delegate.body == Data(repeating: 9, count: 200_000))
            #expect(server.requests(path: "/t").count == 1)
        }
    }

    @Test func earliestBeginDateDelaysTheStartAndAsksTheDelegate() async throws {
        try await withServer { server in
            server.route("/later", response: .ok("later"))
            let delegate = RecordingDelegate()
            let session = makeSession(delegate: delegate)
            let task = session.dataTask(with: server.url("/later"))
            task.earliestBeginDate = Date(timeIntervalSinceNow: 0.3)
            let started = ContinuousClock.now
            task.resume()
            await delegate.waitForCompletions()
            // The delegate was asked, and the request sent, only once the begin date had come.
            let asked = try #require(delegate.delayedAt.withLockedValue { $0 })
            #expect(asked - started >= .milliseconds(280))
            #expect(delegate.events.contains(.delayed))
            #expect(delegate.events.last == .complete(nil))
            #expect(server.requests.count == 1)
        }
    }

    @Test func delayedRequestCanBeCancelledByTheDelegate() async throws {
        try await withServer { server in
            server.route("/later", response: .ok("later"))
            let delegate = RecordingDelegate()
            delegate.delayedDisposition = .cancel
            let session = makeSession(delegate: delegate)
            let task = session.dataTask(with: server.url("/later"))
            task.earliestBeginDate = Date(timeIntervalSinceNow: 0.05)
            task.resume()
            await delegate.waitForCompletions()
            #expect(delegate.events.last == .complete(.cancelled))
            #expect(server.requests.isEmpty)
        }
    }

    /// A background session whose daemon cannot be found or started fails its tasks with a clear error, and
    /// never falls back to running them in the app.
    @Test func backgroundSessionsFailClearlyWithoutTheDaemon() async throws {
        let folder = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let configuration = URLSessionConfiguration.background(withIdentifier: "test.background")
        configuration.backgroundEnvironment = [
            "XDG_RUNTIME_DIR": folder.path, "XDG_DATA_HOME": folder.path, "HOME": folder.path,
            "COURIERD_PATH": folder.appendingPathComponent("no-such-courierd").path,
        ]
        let recorder = BackgroundRecorder()
        let session = await onOwnThread {
            URLSession(configuration: configuration, delegate: recorder, delegateQueue: nil)
        }
        let url = try #require(URL(string: "http://127.0.0.1:9/"))
        session.downloadTask(with: url).resume()
        await recorder.waitForCompletions(1)
        let error = try #require(recorder.errors[1] ?? nil)
        #expect(error.code == .cannotConnectToHost)
        #expect(error.localizedDescription.contains("courierd"))
        #expect(error.failingURL == url)
        session.invalidateAndCancel()
    }
}

@Suite("Task-specific delegates and session defaults")
struct TaskDelegateTests {
    @Test func aTaskDelegateReceivesTheTaskEventsInsteadOfTheSessionDelegate() async throws {
        try await withServer { server in
            server.route("/t", response: .ok("for the task"))
            let sessionDelegate = RecordingDelegate()
            let taskDelegate = RecordingDelegate()
            let session = makeSession(delegate: sessionDelegate)
            let task = session.dataTask(with: server.url("/t"))
            task.delegate = taskDelegate
            task.resume()
            await taskDelegate.waitForCompletions()
            #expect(taskDelegate.body == Data("for the task".utf8))
            #expect(taskDelegate.events.last == .complete(nil))
            #expect(sessionDelegate.dataBytes == 0)
            #expect(!sessionDelegate.events.contains(.complete(nil)))
        }
    }

    @Test func aSessionWithoutAQueueGetsASerialOne() {
        let session = URLSession(configuration: .ephemeral, delegate: nil, delegateQueue: nil)
        #expect(session.delegateQueue.maxConcurrentOperationCount == 1)
        let given = OperationQueue()
        #expect(URLSession(configuration: .ephemeral, delegate: nil, delegateQueue: given).delegateQueue === given)
    }

    @Test func hostNamesResolve() async throws {
        try await withServer(host: "localhost") { server in
            server.route("/name", response: .ok("by name"))
            let url = try #require(URL(string: "http://localhost:\(server.port)/name"))
            let outcome = await makeSession().runDataTask(url)
            #expect(outcome.data == Data("by name".utf8))
        }
    }
}
