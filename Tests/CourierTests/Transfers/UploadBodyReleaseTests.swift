import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

/// An upload task lets go of its `Data` body once it completed: the app may keep the task (to read its response or
/// counters) without keeping the whole upload in memory. The body is still sent again while the request may be
/// (here, after a 307).
@Suite("An upload task's body is let go at completion")
struct UploadBodyReleaseTests {
    @Test func aCompletedUploadTaskNoLongerHoldsItsData() async throws {
        try await withServer { server in
            server.route("/old", method: "POST", response: MockResponse(status: 307, headers: [("Location", "/new")]))
            server.route("/new", method: "POST", response: .status(201))
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            // More bytes than `Data` keeps inline: they stay in this buffer, which its deallocator frees once the
            // last copy of the `Data` is gone.
            let count = 100_000
            let bytes = UnsafeMutableRawPointer.allocate(byteCount: count, alignment: 1)
            bytes.initializeMemory(as: UInt8.self, repeating: 0x41, count: count)
            let freed = AsyncFlag()
            let completed = AsyncFlag()
            var request = URLRequest(url: server.url("/old"))
            request.httpMethod = "POST"
            let task: URLSessionUploadTask
            do {
                let body = Data(
                    bytesNoCopy: bytes, count: count,
                    deallocator: .custom { pointer, _ in
                        pointer.deallocate()
                        freed.set()
                    })
                task = session.uploadTask(with: request, from: body) { _, _, _ in completed.set() }
            }
            task.resume()
            await completed.wait()
            // Without the release the task held the bytes for as long as it lived: this never held.
            try await waitUntil { freed.isSet }
            #expect(freed.isSet)
            #expect(task.state == .completed)
            #expect((task.response as? HTTPURLResponse)?.statusCode == 201)
            #expect(server.requests(path: "/old").first?.bodyLength == count)
            #expect(server.requests(path: "/new").first?.bodyLength == count)
        }
    }
}
