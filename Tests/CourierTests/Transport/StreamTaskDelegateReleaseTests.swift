import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

/// NSURLSession.h: after `captureStreams()`, "the task object is considered completed and will not receive any more
/// delegate messages"; and a task's own delegate "is strongly referenced until the task completes, after which it is
/// reset to `nil`". A delegate that keeps its stream task is then freed once it has the streams.
@Suite("A stream task lets go of its own delegate once its streams were captured")
struct StreamTaskDelegateReleaseTests {
    /// Keeps the task it delegates for, and closes the streams it is handed (which closes the connection).
    final class StreamOwner: NSObject, URLSessionStreamDelegate, @unchecked Sendable {
        let task = NIOLockedValueBox<URLSessionStreamTask?>(nil)
        let becameStreams = AsyncFlag()

        func urlSession(
            _ session: URLSession, streamTask: URLSessionStreamTask, didBecome inputStream: InputStream,
            outputStream: OutputStream
        ) {
            inputStream.close()
            outputStream.close()
            becameStreams.set()
        }
    }

    @Test func aDelegateThatKeepsItsStreamTaskIsFreedOnceTheStreamsWereCaptured() async throws {
        try await withTCPServer { server in
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            weak var released: StreamOwner?
            let task = session.streamTask(withHostName: "127.0.0.1", port: server.port)
            do {
                let owner = StreamOwner()
                released = owner
                owner.task.withLockedValue { $0 = task }
                task.delegate = owner
                task.resume()
                task.captureStreams()
                await owner.becameStreams.wait()
            }
            #expect(task.state == .completed)
            // The delegate call's job lets go of the delegate just after the call returned.
            try await waitUntil { task.delegate == nil && released == nil }
            #expect(task.delegate == nil)
            #expect(released == nil)
        }
    }
}
