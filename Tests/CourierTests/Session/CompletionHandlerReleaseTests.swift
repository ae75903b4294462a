import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

/// A task lets go of its completion handler once the handler ran, as Darwin does: an object that keeps the task it
/// started and is captured by the task's handler (a loader, a view model) then lives only as long as the transfer,
/// not as long as the task.
@Suite("A task's completion handler is let go once it ran")
struct CompletionHandlerReleaseTests {
    /// Keeps the task it started, as apps do to cancel it later.
    final class Owner: @unchecked Sendable {
        let task = NIOLockedValueBox<URLSessionTask?>(nil)
        /// Set by the handler (which so captures the owner).
        let handled = NIOLockedValueBox(false)
    }

    @Test func aDataTaskHandlerThatCapturesTheTasksOwnerIsFreed() async throws {
        try await withServer { server in
            server.route("/a", response: .ok("a"))
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            weak var released: Owner?
            do {
                let owner = Owner()
                released = owner
                let ran = AsyncFlag()
                let task = session.dataTask(with: server.url("/a")) { _, _, _ in
                    // The handler captures the owner, which keeps the task: a cycle until the task lets go.
                    owner.handled.withLockedValue { $0 = true }
                    ran.set()
                }
                owner.task.withLockedValue { $0 = task }
                task.resume()
                await ran.wait()
            }
            // The handler's job ends just after it returns: wait for its last reference to go.
            try await waitUntil { released == nil }
            #expect(released == nil)
        }
    }

    @Test func aDownloadTaskHandlerThatCapturesTheTasksOwnerIsFreed() async throws {
        try await withServer { server in
            server.route("/file", response: .ok("file"))
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            weak var released: Owner?
            do {
                let owner = Owner()
                released = owner
                let ran = AsyncFlag()
                let task = session.downloadTask(with: server.url("/file")) { _, _, _ in
                    owner.handled.withLockedValue { $0 = true }
                    ran.set()
                }
                owner.task.withLockedValue { $0 = task }
                task.resume()
                await ran.wait()
            }
            try await waitUntil { released == nil }
            #expect(released == nil)
        }
    }
}
