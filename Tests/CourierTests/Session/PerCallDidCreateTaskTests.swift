import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

/// `urlSession(_:didCreateTask:)` is "the first message a task sends, providing a place to configure the task before
/// it is resumed" (NSURLSession.h): like every task message it goes to the task's own delegate first, which for an
/// async call is its `delegate:`. It is the only place such a caller sees the task (to watch its `progress`, say).
@Suite("didCreateTask and the delegate of an async call")
struct PerCallDidCreateTaskTests {
    /// A per-call delegate that records the tasks it was told about, and whether each was still unstarted then.
    final class CreationRecorder: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
        let created = NIOLockedValueBox<[(url: URL?, suspended: Bool, ownDelegate: Bool)]>([])

        func urlSession(_ session: URLSession, didCreateTask task: URLSessionTask) {
            let seen = (
                url: task.originalRequest?.url, suspended: task.state == .suspended, ownDelegate: task.delegate === self
            )
            created.withLockedValue { $0.append(seen) }
        }
    }

    private static func wasCreated(_ event: RecordingDelegate.Event) -> Bool {
        if case .created = event { return true }
        return false
    }

    @Test(arguments: ["data", "upload", "download", "bytes"])
    func theDelegateOfAnAsyncCallHearsDidCreateTask(method: String) async throws {
        try await withServer { server in
            server.route("/a", response: .ok("a"))
            server.route("/a", method: "POST", response: .ok("a"))
            let sessionDelegate = RecordingDelegate()
            let session = makeSession(delegate: sessionDelegate)
            defer { session.invalidateAndCancel() }
            let delegate = CreationRecorder()
            let url = server.url("/a")
            switch method {
            case "data":
                _ = try await session.data(from: url, delegate: delegate)
            case "upload":
                var request = URLRequest(url: url)
                request.httpMethod = "POST"
                _ = try await session.upload(for: request, from: Data("up".utf8), delegate: delegate)
            case "download":
                let (file, _) = try await session.download(from: url, delegate: delegate)
                try? FileManager.default.removeItem(at: file)
            default:
                let (bytes, _) = try await session.bytes(from: url, delegate: delegate)
                for try await _ in bytes {}
            }
            let created = delegate.created.withLockedValue { $0 }
            #expect(created.count == 1)
            #expect(created.first?.url == url)
            #expect(created.first?.suspended == true, "told before the task was resumed")
            #expect(created.first?.ownDelegate == true, "the delegate is the task's already")
            // The task's own delegate took the message: the session's does not hear it as well.
            #expect(!sessionDelegate.events.contains(where: Self.wasCreated), "\(sessionDelegate.events)")
        }
    }

    /// A per-call delegate without the method leaves it to the session's delegate, as for every task message.
    @Test func aDelegateWithoutTheMethodLeavesItToTheSessionDelegate() async throws {
        try await withServer { server in
            server.route("/a", response: .ok("a"))
            let sessionDelegate = RecordingDelegate()
            let session = makeSession(delegate: sessionDelegate)
            defer { session.invalidateAndCancel() }
            _ = try await session.data(from: server.url("/a"), delegate: LifecycleRecorder())
            #expect(sessionDelegate.events.filter(Self.wasCreated).count == 1, "\(sessionDelegate.events)")
        }
    }
}
