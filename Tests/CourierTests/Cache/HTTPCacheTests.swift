import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

/// The HTTP cache over loopback: what is stored, when a stored response answers, revalidation with `304`, `Vary`,
/// invalidation, `willCacheResponse`, the size limit, and the cache policies.
@Suite("HTTP cache")
struct HTTPCacheTests {
    /// A resource that must be revalidated every time (`no-cache`) and answers `If-None-Match: "v1"` with a `304`
    /// that carries a new header field.
    private func revalidated(_ server: MockServer) {
        server.route("/doc") { request in
            if request.header("If-None-Match") == "\"v1\"" {
                return MockResponse(status: 304, headers: [("ETag", "\"v1\""), ("X-Checked", "yes")])
            }
            return MockResponse(
                status: 200, headers: [("ETag", "\"v1\""), ("Cache-Control", "no-cache"), ("X-Checked", "no")],
                body: .data(Data("document".utf8)))
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func aFreshResponseAnswersWithoutTheNetwork(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.route(
                "/fresh",
                response: MockResponse(
                    status: 200, headers: [("Cache-Control", "max-age=600")], body: .data(Data("fresh".utf8))))
            let session = makeSession()
            let first = await session.runDataTask(server.url("/fresh"))
            let second = await session.runDataTask(server.url("/fresh"))
            #expect(first.data == Data("fresh".utf8) && second.data == Data("fresh".utf8))
            #expect(second.http?.statusCode == 200)
            #expect(second.http?.value(forHTTPHeaderField: "Cache-Control") == "max-age=600")
            #expect(server.requests.count == 1)
            // The async APIs get the cached response too.
            let (data, response) = try await session.data(from: server.url("/fresh"))
            #expect(data == Data("fresh".utf8) && (response as? HTTPURLResponse)?.statusCode == 200)
            var bytes = Data()
            for try await byte in try await session.bytes(from: server.url("/fresh")).0 { bytes.append(byte) }
            #expect(bytes == Data("fresh".utf8))
            #expect(server.requests.count == 1)
            session.invalidateAndCancel()
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func aStaleResponseIsRevalidatedAndA304ServesTheStoredBody(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            revalidated(server)
            let session = makeSession()
            let first = await session.runDataTask(server.url("/doc"))
            #expect(first.data == Data("document".utf8))
            let second = await session.runDataTask(server.url("/doc"))
            #expect(second.error == nil)
            #expect(second.data == Data("document".utf8))
            #expect(second.http?.statusCode == 200)
            // The 304's fields update the stored ones.
            #expect(second.http?.value(forHTTPHeaderField: "X-Checked") == "yes")
            #expect(server.requests.count == 2)
            #expect(server.requests.last?.header("If-None-Match") == "\"v1\"")
            #expect(server.requests.first?.header("If-None-Match") == nil)
            // The refreshed fields were stored as well.
            let stored = session.configuration.urlCache?.cachedResponse(for: URLRequest(url: server.url("/doc")))
            #expect((stored?.response as? HTTPURLResponse)?.value(forHTTPHeaderField: "X-Checked") == "yes")
            session.invalidateAndCancel()
        }
    }

    /// A `304` that says `no-store`: the stored response is taken out (the request is still answered with it). It
    /// was kept with the merged `no-store`, written to disk again, and revalidated by the next request.
    @Test func a304ThatSaysNoStoreRemovesTheStoredResponse() async throws {
        try await withServer { server in
            server.route("/doc") { request in
                if request.header("If-None-Match") == "\"v1\"" {
                    return MockResponse(status: 304, headers: [("ETag", "\"v1\""), ("Cache-Control", "no-store")])
                }
                return MockResponse(
                    status: 200,
                    headers: [
                        ("ETag", "\"v1\""), ("Cache-Control", "no-cache"),
                        ("Last-Modified", "Mon, 01 Jan 2024 00:00:00 GMT"),
                    ],
                    body: .data(Data("document".utf8)))
            }
            let session = makeSession()
            #expect(await session.runDataTask(server.url("/doc")).data == Data("document".utf8))
            let second = await session.runDataTask(server.url("/doc"))
            #expect(second.data == Data("document".utf8) && second.http?.statusCode == 200)
            #expect(session.configuration.urlCache?.cachedResponse(for: URLRequest(url: server.url("/doc"))) == nil)
            let third = await session.runDataTask(server.url("/doc"))
            #expect(third.data == Data("document".utf8))
            // Asked for again, without a validator: nothing was stored to validate.
            #expect(server.requests.count == 3)
            #expect(server.requests.last?.header("If-None-Match") == nil)
            session.invalidateAndCancel()
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func aDelegateSeesTheRevalidatedResponseNotThe304(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            revalidated(server)
            let delegate = RecordingDelegate()
            let session = makeSession(delegate: delegate)
            _ = await session.runDataTask(server.url("/doc"))
            let task = session.dataTask(with: server.url("/doc"))
            task.resume()
            await delegate.waitForCompletions(1)
            #expect(delegate.body == Data("document".utf8))
            #expect((task.response as? HTTPURLResponse)?.statusCode == 200)
            #expect(delegate.events.contains(.response(200)))
            #expect(!delegate.events.contains(.response(304)))
            session.invalidateAndCancel()
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func reloadRevalidatingAlwaysAsksAndReloadIgnoringNeverReads(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.route("/v") { request in
                if request.header("If-None-Match") == "\"a\"" { return MockResponse(status: 304, headers: []) }
                return MockResponse(
                    status: 200, headers: [("ETag", "\"a\""), ("Cache-Control", "max-age=600")],
                    body: .data(Data("body".utf8)))
            }
            let session = makeSession()
            _ = await session.runDataTask(server.url("/v"))
            var revalidating = URLRequest(url: server.url("/v"))
            revalidating.cachePolicy = .reloadRevalidatingCacheData
            #expect(await session.runDataTask(revalidating).data == Data("body".utf8))
            #expect(server.requests.last?.header("If-None-Match") == "\"a\"")
            var ignoring = URLRequest(url: server.url("/v"))
            ignoring.cachePolicy = .reloadIgnoringLocalCacheData
            #expect(await session.runDataTask(ignoring).data == Data("body".utf8))
            #expect(server.requests.last?.header("If-None-Match") == nil)
            #expect(server.requests.count == 3)
            session.invalidateAndCancel()
        }
    }

    /// `.reloadIgnoringLocalAndRemoteCacheData` neither reads nor stores, whether the request sets it or the
    /// configuration's `requestCachePolicy` does: the session-wide policy was honoured by the lookup only, and the
    /// responses were stored all the same.
    @Test(arguments: [false, true])
    func ignoringLocalAndRemoteDataStoresNothing(sessionWide: Bool) async throws {
        try await withServer { server in
            server.route(
                "/r",
                response: MockResponse(
                    status: 200, headers: [("Cache-Control", "max-age=600")], body: .data(Data("body".utf8))))
            let session = makeSession {
                if sessionWide { $0.requestCachePolicy = .reloadIgnoringLocalAndRemoteCacheData }
            }
            defer { session.invalidateAndCancel() }
            var request = URLRequest(url: server.url("/r"))
            if !sessionWide { request.cachePolicy = .reloadIgnoringLocalAndRemoteCacheData }
            #expect(await session.runDataTask(request).data == Data("body".utf8))
            #expect(await session.runDataTask(request).data == Data("body".utf8))
            #expect(server.requests.count == 2)
            #expect(session.configuration.urlCache?.cachedResponse(for: URLRequest(url: server.url("/r"))) == nil)
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func varyKeepsResponsesApartByTheNamedRequestFields(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.route("/greeting") { request in
                let language = request.header("Accept-Language") ?? "none"
                return MockResponse(
                    status: 200, headers: [("Cache-Control", "max-age=600"), ("Vary", "Accept-Language")],
                    body: .data(Data("hello \(language)".utf8)))
            }
            let session = makeSession()
            func get(_ language: String) async -> Data? {
                var request = URLRequest(url: server.url("/greeting"))
                request.setValue(language, forHTTPHeaderField: "Accept-Language")
                return await session.runDataTask(request).data
            }
            #expect(await get("en") == Data("hello en".utf8))
            #expect(await get("fr") == Data("hello fr".utf8))
            #expect(server.requests.count == 2)
            // The last one stored is French: French answers from the cache; English goes to the network again.
            #expect(await get("fr") == Data("hello fr".utf8))
            #expect(server.requests.count == 2)
            #expect(await get("en") == Data("hello en".utf8))
            #expect(server.requests.count == 3)
            session.invalidateAndCancel()
        }
    }

    /// RFC 9111 §4.4: a POST answered with a 2xx, or with a 3xx (Post/Redirect/Get: a `303` to the updated
    /// resource, whose `GET` must reach the server, so the stored response goes before the redirect is followed).
    @Test(arguments: WireProtocol.allCases, [false, true])
    func aSuccessfulUnsafeRequestInvalidatesTheStoredResponse(over wire: WireProtocol, seeOther: Bool) async throws {
        try await withServer(wire) { server in
            let version = NIOLockedValueBox(1)
            server.route("/item", method: "GET") { _ in
                MockResponse(
                    status: 200, headers: [("Cache-Control", "max-age=600")],
                    body: .data(Data("v\(version.withLockedValue { $0 })".utf8)))
            }
            server.route("/item", method: "POST") { _ in
                version.withLockedValue { $0 += 1 }
                return seeOther ? MockResponse(status: 303, headers: [("Location", "/item")]) : .ok("updated")
            }
            let session = makeSession()
            #expect(await session.runDataTask(server.url("/item")).data == Data("v1".utf8))
            #expect(await session.runDataTask(server.url("/item")).data == Data("v1".utf8))
            var post = URLRequest(url: server.url("/item"))
            post.httpMethod = "POST"
            post.httpBody = Data("x".utf8)
            #expect(await session.runDataTask(post).data == Data((seeOther ? "v2" : "updated").utf8))
            #expect(await session.runDataTask(server.url("/item")).data == Data("v2".utf8))
            #expect(server.requests(path: "/item").count == 3)
            session.invalidateAndCancel()
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func whatIsNotStored(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.route(
                "/no-store",
                response: MockResponse(
                    status: 200, headers: [("Cache-Control", "no-store, max-age=600")], body: .data(Data("a".utf8))))
            server.route(
                "/vary-star",
                response: MockResponse(
                    status: 200, headers: [("Cache-Control", "max-age=600"), ("Vary", "*")],
                    body: .data(Data("b".utf8))))
            var big = MockResponse(
                status: 200, headers: [("Cache-Control", "max-age=600")],
                body: .data(Data(repeating: 7, count: 60_000)))
            big.chunked = true
            server.route("/big", response: big)
            server.route(
                "/partial",
                response: MockResponse(
                    status: 206, headers: [("Cache-Control", "max-age=600"), ("Content-Range", "bytes 0-0/10")],
                    body: .data(Data("c".utf8))))
            // 5% of 1 MB is 52,428 bytes: the 60,000-byte body (chunked, so of unknown length) outgrows it.
            let session = makeSession {
                $0.urlCache = URLCache(memoryCapacity: 1_048_576, diskCapacity: 0)
            }
            for path in ["/no-store", "/vary-star", "/big", "/partial"] {
                _ = await session.runDataTask(server.url(path))
                _ = await session.runDataTask(server.url(path))
                #expect(server.requests(path: path).count == 2, "\(path)")
                #expect(session.configuration.urlCache?.cachedResponse(for: URLRequest(url: server.url(path))) == nil)
            }
            session.invalidateAndCancel()
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func onlyIfCachedWithNothingStoredFails(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.route("/o", response: .ok("never"))
            let session = makeSession()
            var request = URLRequest(url: server.url("/o"))
            request.setValue("only-if-cached", forHTTPHeaderField: "Cache-Control")
            #expect(await session.runDataTask(request).urlError?.code == .resourceUnavailable)
            #expect(server.requests.isEmpty)
            session.invalidateAndCancel()
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func downloadTasksNeitherReadNorFillTheCache(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.route(
                "/file",
                response: MockResponse(
                    status: 200, headers: [("Cache-Control", "max-age=600")], body: .data(Data("file".utf8))))
            let session = makeSession()
            for _ in 0..<2 {
                let (url, _) = try await session.download(from: server.url("/file"))
                #expect(try Data(contentsOf: url) == Data("file".utf8))
                try? FileManager.default.removeItem(at: url)
            }
            #expect(server.requests.count == 2)
            #expect(session.configuration.urlCache?.cachedResponse(for: URLRequest(url: server.url("/file"))) == nil)
            session.invalidateAndCancel()
        }
    }
}

/// A data delegate that answers `willCacheResponse` with a script and records what it was offered.
final class CachingDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    enum Answer {
        case keep, refuse
        case replace(Data)
    }
    let answer: Answer
    let offered = NIOLockedValueBox<[CachedURLResponse]>([])
    let completed = NIOLockedValueBox<[String]>([])

    init(_ answer: Answer) { self.answer = answer }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, willCacheResponse proposedResponse: CachedURLResponse,
        completionHandler: @escaping @Sendable (CachedURLResponse?) -> Void
    ) {
        offered.withLockedValue { $0.append(proposedResponse) }
        // Darwin asks before the task completes.
        completed.withLockedValue { $0.append("willCache") }
        switch answer {
        case .keep: completionHandler(proposedResponse)
        case .refuse: completionHandler(nil)
        case .replace(let data):
            completionHandler(CachedURLResponse(response: proposedResponse.response, data: data))
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        completed.withLockedValue { $0.append("complete") }
    }
}

extension HTTPCacheTests {
    @Test(arguments: WireProtocol.allCases)
    func willCacheResponseIsAskedBeforeCompletionAndItsAnswerIsStored(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.route(
                "/c",
                response: MockResponse(
                    status: 200, headers: [("Cache-Control", "max-age=600")], body: .data(Data("original".utf8))))
            for answer in [CachingDelegate.Answer.keep, .refuse, .replace(Data("replaced".utf8))] {
                let delegate = CachingDelegate(answer)
                let session = makeSession(delegate: delegate)
                let task = session.dataTask(with: server.url("/c"))
                task.resume()
                try await waitUntil { delegate.completed.withLockedValue { $0.count } == 2 }
                #expect(delegate.completed.withLockedValue { $0 } == ["willCache", "complete"])
                #expect(delegate.offered.withLockedValue { $0.first?.data } == Data("original".utf8))
                let stored = session.configuration.urlCache?.cachedResponse(for: URLRequest(url: server.url("/c")))
                switch answer {
                case .keep: #expect(stored?.data == Data("original".utf8))
                case .refuse: #expect(stored == nil)
                case .replace(let data): #expect(stored?.data == data)
                }
                session.invalidateAndCancel()
            }
        }
    }
}

/// A data delegate that keeps `willCacheResponse`'s completion handler until the test answers, and records how the
/// task completed.
final class HeldCacheDecisionDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    let pending = NIOLockedValueBox<(CachedURLResponse, @Sendable (CachedURLResponse?) -> Void)?>(nil)
    let errors = NIOLockedValueBox<[URLError.Code?]>([])

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, willCacheResponse proposedResponse: CachedURLResponse,
        completionHandler: @escaping @Sendable (CachedURLResponse?) -> Void
    ) {
        pending.withLockedValue { $0 = (proposedResponse, completionHandler) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        errors.withLockedValue { $0.append((error as? URLError)?.code) }
    }
}

extension HTTPCacheTests {
    /// `cancel()` while the app decides about `willCacheResponse` ends the task as cancelled, as `cancel()` of a
    /// task that has not completed does on Darwin: the engine used to ignore it (the body had ended) and complete
    /// the task with success once the app answered, after its `state` had said `.canceling`.
    @Test func cancellingWhileWillCacheResponseIsPendingEndsTheTaskAsCancelled() async throws {
        try await withServer(.http1) { server in
            server.route(
                "/held",
                response: MockResponse(
                    status: 200, headers: [("Cache-Control", "max-age=600")], body: .data(Data("held".utf8))))
            let delegate = HeldCacheDecisionDelegate()
            let session = makeSession(delegate: delegate)
            defer { session.invalidateAndCancel() }
            let task = session.dataTask(with: server.url("/held"))
            task.resume()
            try await waitUntil { delegate.pending.withLockedValue { $0 != nil } }
            task.cancel()
            try await waitUntil { !delegate.errors.withLockedValue { $0.isEmpty } }
            // The answer comes too late to change anything.
            if let held = delegate.pending.withLockedValue({ $0 }) { held.1(held.0) }
            try await Task.sleep(for: .milliseconds(100))
            #expect(delegate.errors.withLockedValue { $0 } == [.cancelled])
            #expect(task.state == .completed)
            #expect((task.error as? URLError)?.code == .cancelled)
        }
    }
}
