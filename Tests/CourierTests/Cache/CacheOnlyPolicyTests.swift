import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

/// `.returnCacheDataElseLoad` and `.returnCacheDataDontLoad` answer from the session's `URLCache` without the
/// network, through the same delivery modes as the network.
@Suite("Cache-only policies")
struct CacheOnlyPolicyTests {
    private func cache(_ session: URLSession, _ url: URL, body: String) throws {
        let response = try #require(
            HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: ["X-From": "cache"]))
        session.configuration.urlCache?.storeCachedResponse(
            CachedURLResponse(response: response, data: Data(body.utf8)), for: URLRequest(url: url))
    }

    @Test(arguments: [URLRequest.CachePolicy.returnCacheDataElseLoad, .returnCacheDataDontLoad])
    func aCachedResponseAnswersWithoutTheNetwork(policy: URLRequest.CachePolicy) async throws {
        try await withServer { server in
            server.route("/r", response: .ok("network"))
            let session = makeSession()
            try cache(session, server.url("/r"), body: "cached")
            var request = URLRequest(url: server.url("/r"))
            request.cachePolicy = policy
            let outcome = await session.runDataTask(request)
            #expect(outcome.data == Data("cached".utf8))
            #expect((outcome.response as? HTTPURLResponse)?.value(forHTTPHeaderField: "X-From") == "cache")
            #expect(server.requests.isEmpty)
            session.invalidateAndCancel()
        }
    }

    @Test func nothingCachedLoadsOrFails() async throws {
        try await withServer { server in
            server.route("/r", response: .ok("network"))
            let session = makeSession()
            var elseLoad = URLRequest(url: server.url("/r"))
            elseLoad.cachePolicy = .returnCacheDataElseLoad
            #expect(await session.runDataTask(elseLoad).data == Data("network".utf8))
            // The load stored the response (a 200 is heuristically cacheable): it answers now, whatever its age.
            var dontLoad = URLRequest(url: server.url("/r"))
            dontLoad.cachePolicy = .returnCacheDataDontLoad
            #expect(await session.runDataTask(dontLoad).data == Data("network".utf8))
            var never = URLRequest(url: server.url("/never-loaded"))
            never.cachePolicy = .returnCacheDataDontLoad
            #expect(await session.runDataTask(never).urlError?.code == .resourceUnavailable)
            #expect(server.requests.count == 1)
            session.invalidateAndCancel()
        }
    }

    /// The configuration's policy applies to requests that use the protocol's; other policies still load.
    @Test func theConfigurationsPolicyAndReloadsApply() async throws {
        try await withServer { server in
            server.route("/r", response: .ok("network"))
            let session = makeSession { $0.requestCachePolicy = .returnCacheDataDontLoad }
            try cache(session, server.url("/r"), body: "cached")
            #expect(await session.runDataTask(server.url("/r")).data == Data("cached".utf8))
            var reload = URLRequest(url: server.url("/r"))
            reload.cachePolicy = .reloadIgnoringLocalCacheData
            #expect(await session.runDataTask(reload).data == Data("network".utf8))
            session.invalidateAndCancel()
        }
    }

    /// A large cached body arrives whole through the async API (parts of 64 KiB).
    @Test func aLargeCachedBodyStreamsThroughAsyncBytes() async throws {
        try await withServer { server in
            let session = makeSession()
            let body = String(repeating: "0123456789", count: 50_000)
            try cache(session, server.url("/big"), body: body)
            var request = URLRequest(url: server.url("/big"))
            request.cachePolicy = .returnCacheDataDontLoad
            let (bytes, _) = try await session.bytes(for: request)
            var count = 0
            for try await _ in bytes { count += 1 }
            #expect(count == 500_000)
            session.invalidateAndCancel()
        }
    }
}
