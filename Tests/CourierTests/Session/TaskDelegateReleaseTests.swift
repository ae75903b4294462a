import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

/// NSURLSession.h on the task's `delegate`: "Delegate is strongly referenced until the task completes, after which
/// it is reset to `nil`." An object that keeps the task it delegates for (a loader, a download manager) then lives
/// only as long as the transfer.
@Suite("A task's own delegate is let go at completion")
struct TaskDelegateReleaseTests {
    /// Keeps the task it delegates for, and says when it completed.
    final class Loader: NSObject, URLSessionDataDelegate, @unchecked Sendable {
        let task = NIOLockedValueBox<URLSessionTask?>(nil)
        let completed = AsyncFlag()
        /// Whether the task still named this object its delegate while it heard the completion.
        let wasDelegateAtCompletion = NIOLockedValueBox(false)

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            wasDelegateAtCompletion.withLockedValue { $0 = task.delegate === self }
            completed.set()
        }
    }

    @Test func aDelegateThatKeepsItsTaskIsFreedOnceTheTaskCompleted() async throws {
        try await withServer { server in
            server.route("/a", response: .ok("a"))
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            weak var released: Loader?
            let task = session.dataTask(with: server.url("/a"))
            do {
                let loader = Loader()
                released = loader
                loader.task.withLockedValue { $0 = task }
                task.delegate = loader
                task.resume()
                await loader.completed.wait()
                #expect(loader.wasDelegateAtCompletion.withLockedValue { $0 })
            }
            try await waitUntil { task.delegate == nil }
            #expect(task.delegate == nil)
            #expect(released == nil)
        }
    }

    @Test func thePerCallDelegateOfBytesIsLetGoWhenTheBodyEnded() async throws {
        try await withServer { server in
            server.route("/b", response: .ok("body"))
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            weak var released: Loader?
            let bytes: URLSession.AsyncBytes
            do {
                let delegate = Loader()
                released = delegate
                bytes = try await session.bytes(from: server.url("/b"), delegate: delegate).0
            }
            var body = Data()
            for try await byte in bytes { body.append(byte) }
            #expect(body == Data("body".utf8))
            // The `AsyncBytes` (and so its task) is still held: the delegate must not be.
            try await waitUntil { bytes.task.delegate == nil }
            #expect(released == nil)
        }
    }
}
