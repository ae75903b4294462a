import Courier
import CourierManager
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

/// What a completion handler got.
private struct Completion: @unchecked Sendable {
    var response: URLResponse?
    var object: Any?
    var error: (any Error)?
}

/// A manager whose completions run on a queue of their own, with an ephemeral configuration.
private func makeManager() -> SessionManager {
    let configuration = URLSessionConfiguration.ephemeral
    configuration.connectionProxyDictionary = [:]
    let manager = SessionManager(sessionConfiguration: configuration)
    manager.completionQueue = DispatchQueue(label: "completions")
    return manager
}

/// Starts the task `make` returns and waits for its completion handler.
private func complete(
    _ make: (@escaping SessionManager.CompletionHandler) -> URLSessionTask
) async -> Completion {
    await withCheckedContinuation { continuation in
        let task = make { response, object, error in
            continuation.resume(returning: Completion(response: response, object: object, error: error))
        }
        task.resume()
    }
}

@Suite("SessionManager")
struct SessionManagerTests {
    @Test func aDataTaskIsSerializedAndItsProgressFollowsTheBytes() async throws {
        try await withServer { server in
            let body = Data(#"{"name":"courier","tags":["a",null],"empty":null}"#.utf8)
            server.route(
                "/json", response: MockResponse(headers: [("Content-Type", "application/json")], body: .data(body)))
            let manager = makeManager()
            defer { manager.invalidateSessionCancelingTasks(true, resetSession: false) }
            var serializer = JSONResponseSerializer()
            serializer.removesKeysWithNullValues = true
            manager.responseSerializer = serializer
            let request = URLRequest(url: server.url("/json"))
            var madeTask: URLSessionDataTask?
            let result = await complete { done in
                let task = manager.dataTask(with: request, completionHandler: done)
                madeTask = task
                return task
            }
            #expect(result.error == nil)
            let object = try #require(result.object as? [String: Any])
            #expect(object["name"] as? String == "courier")
            #expect(object.keys.contains("empty") == false)
            #expect((object["tags"] as? [Any])?.count == 2)
            #expect((result.response as? HTTPURLResponse)?.statusCode == 200)
            let task = try #require(madeTask)
            // The per-task delegate is gone after completion.
            #expect(manager.downloadProgress(for: task) == nil)
        }
    }

    @Test func progressHandlersSeeEveryByteAndTheirProgressControlsTheTask() async throws {
        try await withServer { server in
            server.route("/bytes", response: MockResponse(body: .pattern(length: 100_000)))
            let manager = makeManager()
            defer { manager.invalidateSessionCancelingTasks(true, resetSession: false) }
            manager.responseSerializer = HTTPResponseSerializer()
            let seen = LockedValue<Int64>(0)
            let result = await complete { done in
                manager.dataTask(
                    with: URLRequest(url: server.url("/bytes")),
                    downloadProgress: { progress in seen.set(progress.completedUnitCount) }, completionHandler: done)
            }
            #expect((result.object as? Data)?.count == 100_000)
            #expect(seen.get() == 100_000)
        }
    }

    @Test func cancellingTheProgressCancelsTheTask() async throws {
        try await withServer { server in
            var slow = MockResponse(body: .pattern(length: 1_000_000))
            slow.chunkSize = 1000
            slow.chunkDelay = .milliseconds(20)
            server.route("/slow", response: slow)
            let manager = makeManager()
            defer { manager.invalidateSessionCancelingTasks(true, resetSession: false) }
            let result = await complete { done in
                let task = manager.dataTask(with: URLRequest(url: server.url("/slow")), completionHandler: done)
                manager.downloadProgress(for: task)?.cancel()
                return task
            }
            #expect((result.error as? URLError)?.code == .cancelled)
        }
    }

    @Test func anErrorStatusFailsValidationWithTheResponseAndBodyInTheError() async throws {
        try await withServer { server in
            server.route(
                "/missing",
                response: MockResponse(
                    status: 404, headers: [("Content-Type", "application/json")], body: .data(Data(#"{"e":1}"#.utf8))))
            let manager = makeManager()
            defer { manager.invalidateSessionCancelingTasks(true, resetSession: false) }
            let result = await complete { done in
                manager.dataTask(with: URLRequest(url: server.url("/missing")), completionHandler: done)
            }
            let error = try #require(result.error as NSError?)
            #expect(error.domain == ResponseSerializationError.domain)
            #expect(
                (error.userInfo[ResponseSerializationError.failingResponseKey] as? HTTPURLResponse)?.statusCode == 404)
            #expect(error.userInfo[ResponseSerializationError.failingDataKey] as? Data == Data(#"{"e":1}"#.utf8))
        }
    }

    @Test func hostileJSONAndTheWrongContentTypeAreErrorsNotCrashes() async throws {
        try await withServer { server in
            server.route(
                "/truncated",
                response: MockResponse(
                    headers: [("Content-Type", "application/json")], body: .data(Data(#"{"a":[1,2"#.utf8))))
            server.route(
                "/html", response: MockResponse(headers: [("Content-Type", "text/html")], body: .data(Data("<p>".utf8)))
            )
            let manager = makeManager()
            defer { manager.invalidateSessionCancelingTasks(true, resetSession: false) }
            for path in ["/truncated", "/html"] {
                let result = await complete { done in
                    manager.dataTask(with: URLRequest(url: server.url(path)), completionHandler: done)
                }
                #expect((result.error as NSError?)?.domain == ResponseSerializationError.domain, "\(path)")
                #expect(result.object == nil)
            }
        }
    }

    @Test func aDecodableSerializerGivesTheValue() async throws {
        struct Item: Decodable, Sendable, Equatable { var id: Int }
        try await withServer { server in
            server.route(
                "/item",
                response: MockResponse(
                    headers: [("Content-Type", "application/json")], body: .data(Data(#"{"id":7}"#.utf8))))
            let manager = makeManager()
            defer { manager.invalidateSessionCancelingTasks(true, resetSession: false) }
            manager.responseSerializer = DecodableResponseSerializer(Item.self)
            let result = await complete { done in
                manager.dataTask(with: URLRequest(url: server.url("/item")), completionHandler: done)
            }
            #expect(result.object as? Item == Item(id: 7))
        }
    }

    @Test func aDownloadGoesToItsDestinationAndAFailedMoveIsReported() async throws {
        try await withServer { server in
            server.route("/file", response: MockResponse(body: .pattern(length: 50_000)))
            let manager = makeManager()
            defer { manager.invalidateSessionCancelingTasks(true, resetSession: false) }
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("manager-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let target = folder.appendingPathComponent("file.bin")
            let result = await complete { done in
                manager.downloadTask(
                    with: URLRequest(url: server.url("/file")), destination: { _, _ in target }, completionHandler: done
                )
            }
            #expect(result.error == nil)
            #expect(result.object as? URL == target)
            #expect((try? Data(contentsOf: target))?.count == 50_000)

            let failures = NotificationCounter(.courierManagerDownloadDidFailToMoveFile)
            let nowhere = folder.appendingPathComponent("missing/folder/file.bin")
            let failed = await complete { done in
                manager.downloadTask(
                    with: URLRequest(url: server.url("/file")), destination: { _, _ in nowhere },
                    completionHandler: done)
            }
            #expect(failed.error != nil)
            #expect(failures.count == 1)
        }
    }

    @Test func anUploadReportsItsProgressAndTheServerGetsTheBody() async throws {
        try await withServer { server in
            server.route("/upload", method: "POST", response: .ok("stored"))
            let manager = makeManager()
            defer { manager.invalidateSessionCancelingTasks(true, resetSession: false) }
            manager.responseSerializer = HTTPResponseSerializer()
            var request = URLRequest(url: server.url("/upload"))
            request.httpMethod = "POST"
            let body = Data((0..<200_000).map { UInt8($0 % 251) })
            let sent = LockedValue<Int64>(0)
            let result = await complete { done in
                manager.uploadTask(
                    with: request, from: body, progress: { sent.set($0.completedUnitCount) }, completionHandler: done)
            }
            #expect(result.object as? Data == Data("stored".utf8))
            #expect(sent.get() == 200_000)
            #expect(server.requests(path: "/upload").first?.body == body)
        }
    }

    @Test func aStreamedUploadSendsTheMultipartRequestsBodyStream() async throws {
        try await withServer { server in
            server.route("/upload", method: "POST", response: .ok("stored"))
            let manager = makeManager()
            defer { manager.invalidateSessionCancelingTasks(true, resetSession: false) }
            manager.responseSerializer = HTTPResponseSerializer()
            // AFNetworking's README: a multipart request sent with uploadTaskWithStreamedRequest:.
            let request = try HTTPRequestSerializer().multipartFormRequest(
                method: "POST", url: server.url("/upload"), memoryThreshold: 0
            ) { form in
                form.append(Data("hello".utf8), name: "greeting")
            }
            #expect(request.httpBodyStream != nil)
            let result = await complete { done in
                manager.uploadTask(withStreamedRequest: request, completionHandler: done)
            }
            // Before: the manager gave no stream in needNewBodyStream and the upload failed without a body.
            #expect(result.error == nil)
            #expect(result.object as? Data == Data("stored".utf8))
            let received = try #require(server.requests(path: "/upload").first?.body)
            #expect(received.count == Int(request.value(forHTTPHeaderField: "Content-Length") ?? ""))
            #expect(received.range(of: Data("hello".utf8)) != nil)
        }
    }

    @Test func hooksDecideAndObserve() async throws {
        try await withServer { server in
            server.route("/redirect", response: MockResponse(status: 302, headers: [("Location", "/target")]))
            server.route("/target", response: .ok("target"))
            let manager = makeManager()
            defer { manager.invalidateSessionCancelingTasks(true, resetSession: false) }
            manager.responseSerializer = HTTPResponseSerializer()
            let completed = LockedValue(0)
            var hooks = SessionManagerHooks()
            hooks.taskWillPerformHTTPRedirection = { _, _, _, _ in nil }
            hooks.taskDidComplete = { _, _, _ in completed.set(completed.get() + 1) }
            manager.hooks = hooks
            let notifications = NotificationCounter(.courierManagerTaskDidComplete, path: "/redirect")
            let result = await complete { done in
                manager.dataTask(with: URLRequest(url: server.url("/redirect")), completionHandler: done)
            }
            // The hook refused the redirect: the 302 itself is the response, and validation rejects it.
            #expect((result.response as? HTTPURLResponse)?.statusCode == 302)
            #expect(server.requests(path: "/target").isEmpty)
            #expect(completed.get() == 1)
            try await waitFor { notifications.count == 1 }
        }
    }

    @Test func pausingAndResumingTheProgressSuspendsAndResumesTheTaskWithNotifications() async throws {
        try await withServer { server in
            var slow = MockResponse(body: .pattern(length: 200_000))
            slow.chunkSize = 2000
            slow.chunkDelay = .milliseconds(10)
            server.route("/paused", response: slow)
            let manager = makeManager()
            defer { manager.invalidateSessionCancelingTasks(true, resetSession: false) }
            manager.responseSerializer = HTTPResponseSerializer()
            let resumed = NotificationCounter(.courierManagerTaskDidResume, path: "/paused")
            let suspended = NotificationCounter(.courierManagerTaskDidSuspend, path: "/paused")
            let finished = LockedValue<Int?>(nil)
            let task = manager.dataTask(with: URLRequest(url: server.url("/paused"))) { _, object, _ in
                finished.set((object as? Data)?.count ?? -1)
            }
            let progress = try #require(manager.downloadProgress(for: task))
            manager.resume(task)
            // Progress calls its handlers on a queue of its own.
            progress.pause()
            try await waitFor { task.state == .suspended }
            progress.resume()
            try await waitFor { task.state != .suspended }
            try await waitFor { finished.get() != nil }
            #expect(finished.get() == 200_000)
            #expect(resumed.count == 2 && suspended.count == 1)
        }
    }

    @Test func aResetSessionsTasksDoNotTakeTheOldSessionsTaskDelegates() async throws {
        try await withServer { server in
            var slow = MockResponse(body: .pattern(length: 100_000))
            slow.chunkSize = 1000
            slow.chunkDelay = .milliseconds(10)
            server.route("/slow", response: slow)
            server.route("/fast", response: .ok("fast"))
            let manager = makeManager()
            defer { manager.invalidateSessionCancelingTasks(true, resetSession: false) }
            manager.responseSerializer = HTTPResponseSerializer()
            let old = LockedValue<Int?>(nil)
            let oldTask = manager.dataTask(with: URLRequest(url: server.url("/slow"))) { _, object, _ in
                old.set((object as? Data)?.count ?? -1)
            }
            oldTask.resume()
            // The old session's task goes on; the new session numbers its tasks from 1 again.
            manager.invalidateSessionCancelingTasks(false, resetSession: true)
            let oldIdentifier = oldTask.taskIdentifier
            let fresh = await complete { done in
                let task = manager.dataTask(with: URLRequest(url: server.url("/fast")), completionHandler: done)
                #expect(task.taskIdentifier == oldIdentifier)
                return task
            }
            #expect(fresh.object as? Data == Data("fast".utf8))
            // Before: the new task's delegate replaced the old one, so the old task's completion never came.
            try await waitFor { old.get() != nil }
            #expect(old.get() == 100_000)
        }
    }

    @Test func theManagerAndItsTasksGoAwayAfterInvalidationAndAResetMakesANewSession() async throws {
        try await withServer { server in
            server.route("/done", response: .ok("done"))
            weak var released: SessionManager?
            weak var finishedTask: URLSessionTask?
            weak var progress: Progress?
            do {
                let manager = makeManager()
                manager.responseSerializer = HTTPResponseSerializer()
                let first = manager.session
                let result = await complete { done in
                    let task = manager.dataTask(with: URLRequest(url: server.url("/done")), completionHandler: done)
                    finishedTask = task
                    progress = manager.downloadProgress(for: task)
                    return task
                }
                #expect(result.error == nil)
                manager.invalidateSessionCancelingTasks(false, resetSession: true)
                #expect(manager.session !== first)
                manager.invalidateSessionCancelingTasks(true, resetSession: false)
                released = manager
            }
            try await waitFor { released == nil && finishedTask == nil && progress == nil }
        }
    }
}

/// A value behind a lock, for handlers that run on other queues.
final class LockedValue<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func get() -> Value { lock.withLock { value } }
    func set(_ newValue: Value) { lock.withLock { value = newValue } }
}

/// Counts the notifications named `name` from its creation on, about tasks whose request path is `path` when set
/// (other tests post the same notifications meanwhile).
final class NotificationCounter: @unchecked Sendable {
    private let counted = LockedValue(0)
    private var observer: (any NSObjectProtocol)?
    init(_ name: Notification.Name, path: String? = nil) {
        let counted = self.counted
        observer = NotificationCenter.default.addObserver(forName: name, object: nil, queue: nil) { note in
            if let path, (note.object as? URLSessionTask)?.originalRequest?.url?.path != path { return }
            counted.set(counted.get() + 1)
        }
    }
    deinit { observer.map(NotificationCenter.default.removeObserver) }
    var count: Int { counted.get() }
}

/// Polls `condition` every 10 ms for up to 30 s; records an issue when it never holds. A deadline rather than a count
/// of polls: on a loaded machine running the whole suite, 500 polls of 10 ms once ran out before a 1 s body came.
func waitFor(_ condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(30)
    while ContinuousClock.now < deadline {
        if condition() { return }
        try await Task.sleep(for: .milliseconds(10))
    }
    Issue.record("the condition never held")
}
