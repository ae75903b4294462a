import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

/// `.returnCacheDataDontLoad` is Darwin's offline mode: the cache is "accessed exclusively" and the originating
/// source "ignored", also for the requests the cache never answers.
@Suite("Cache-only policies: nothing goes out")
struct DontLoadNeverLoadsTests {
    @Test func aRequestTheCacheCannotAnswerFailsWithoutGoingOut() async throws {
        try await withServer { server in
            server.route("/submit", response: .ok("accepted"))
            server.route("/doc", response: .ok("document"))
            let session = makeSession { $0.requestCachePolicy = .returnCacheDataDontLoad }
            var post = URLRequest(url: server.url("/submit"))
            post.httpMethod = "POST"
            post.httpBody = Data("form=1".utf8)
            #expect(await session.runDataTask(post).urlError?.code == .resourceUnavailable)
            var ranged = URLRequest(url: server.url("/doc"))
            ranged.setValue("bytes=0-3", forHTTPHeaderField: "Range")
            #expect(await session.runDataTask(ranged).urlError?.code == .resourceUnavailable)
            #expect(server.requests.isEmpty)
            session.invalidateAndCancel()
        }
    }
}
