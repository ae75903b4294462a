import Courier
import Foundation
import NIOConcurrencyHelpers
import Testing

/// Custom `URLProtocol`s answer requests as on Darwin: a stub written against the public API serves responses,
/// slow bodies, redirects, errors, challenges and cached responses, through every delivery mode.
@Suite("Custom URL protocols", .serialized)
struct CustomProtocolTests {
    private func session(delegate: (any URLSessionDelegate)? = nil) -> URLSession {
        makeSession(delegate: delegate) { $0.protocolClasses = [StubProtocol.self] }
    }

    private func url(_ path: String) -> URL { URL(string: "https://stub.test\(path)")! }

    @Test func aProtocolAnswersOnAThreadWithARunningRunLoop() async throws {
        StubProtocol.script(
            "/slow",
            .respond(
                status: 201, headers: ["X-Stub": "1"], parts: [Data("one ".utf8), Data("two".utf8)], delay: 0.01))
        let session = session()
        let outcome = await session.runDataTask(URLRequest(url: url("/slow")))
        #expect(outcome.error == nil)
        #expect(outcome.data == Data("one two".utf8))
        #expect(outcome.http?.statusCode == 201 && outcome.http?.value(forHTTPHeaderField: "X-Stub") == "1")
        let log = StubProtocol.log.withLockedValue { $0 }
        #expect(log.contains("start /slow canonical=yes"))
        #expect(log.contains("run loop kCFRunLoopDefaultMode task=true"))
        // stopLoading follows the completion, on the protocol's thread.
        try await waitUntil { StubProtocol.log.withLockedValue { $0.contains("stop /slow") } }
        // The async APIs too.
        let (data, _) = try await session.data(from: url("/slow"))
        #expect(data == Data("one two".utf8))
        session.invalidateAndCancel()
    }

    /// A body the protocol loads in one piece that is a slice of a larger `Data` (its indices start past 0) arrives
    /// as a body of its own, indexed from 0; one of several pieces, whole. (The protocol's pieces are copied on their
    /// way to the task today; this holds the whole path to what the app sees.)
    @Test func aBodyLoadedAsASliceIsIndexedFromZero() async throws {
        let whole = Data("--slice--".utf8)
        let slice = whole[2..<7]
        #expect(slice.startIndex == 2)
        StubProtocol.script("/slice", .respond(status: 200, headers: [:], parts: [slice]))
        StubProtocol.script("/slices", .respond(status: 200, headers: [:], parts: [slice, whole[7...]]))
        let session = session()
        defer { session.invalidateAndCancel() }
        for (path, expected) in [("/slice", "slice"), ("/slices", "slice--")] {
            let outcome = await session.runDataTask(URLRequest(url: url(path)))
            let data = try #require(outcome.data, "\(path)")
            #expect(data.startIndex == 0, "\(path)")
            #expect(data[0] == UInt8(ascii: "s"), "\(path)")
            #expect(String(decoding: data, as: UTF8.self) == expected, "\(path)")
        }
        let (data, _) = try await session.data(from: url("/slice"))
        #expect(data.startIndex == 0)
        #expect(data == Data("slice".utf8))
    }

    @Test func aDelegateSeesTheProtocolsEventsAndADownloadGetsAFile() async throws {
        StubProtocol.script("/d", .respond(status: 200, headers: [:], parts: [Data("abc".utf8), Data("def".utf8)]))
        let delegate = RecordingDelegate()
        let session = session(delegate: delegate)
        session.dataTask(with: url("/d")).resume()
        await delegate.waitForCompletions(1)
        #expect(delegate.body == Data("abcdef".utf8))
        #expect(delegate.events.contains(.response(200)))
        #expect(delegate.events.last == .complete(nil))
        let (file, response) = try await session.download(from: url("/d"))
        #expect(try Data(contentsOf: file) == Data("abcdef".utf8))
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        try? FileManager.default.removeItem(at: file)
        session.invalidateAndCancel()
    }

    @Test func plainResponsesErrorsAndRedirects() async throws {
        StubProtocol.script("/plain", .plain(mimeType: "text/plain", body: Data("hi".utf8)))
        StubProtocol.script("/offline", .fail(.notConnectedToInternet))
        StubProtocol.script("/moved", .redirect(to: "https://stub.test/plain"))
        let session = session()
        let plain = await session.runDataTask(URLRequest(url: url("/plain")))
        #expect(plain.data == Data("hi".utf8))
        #expect(plain.response?.mimeType == "text/plain" && plain.http == nil)
        #expect(await session.runDataTask(URLRequest(url: url("/offline"))).urlError?.code == .notConnectedToInternet)
        let moved = await session.runDataTask(URLRequest(url: url("/moved")))
        #expect(moved.data == Data("hi".utf8))
        #expect(moved.response?.url == url("/plain"))
        session.invalidateAndCancel()
    }

    /// Darwin hands a protocol's failure to the app unchanged: stubs fail with the app's own error type and tests
    /// check for it. (Courier had turned any error that was not a `URLError` into `URLError(.unknown)`, and a
    /// `URLError` into a new one without its user info.)
    @Test func aProtocolsOwnErrorReachesTheAppUnchanged() async throws {
        let stubError = StubFailure(quota: 7)
        StubProtocol.script("/own-error", .failWith(stubError))
        let detailed = URLError(.notConnectedToInternet, userInfo: ["stub.detail": "airplane mode"])
        StubProtocol.script("/detailed-error", .failWith(detailed))
        let delegate = RecordingDelegate()
        let session = session(delegate: delegate)
        // A completion handler.
        let handled = await session.runDataTask(URLRequest(url: url("/own-error")))
        #expect(handled.error as? StubFailure == stubError)
        // Swift concurrency, for a data and a download task.
        await #expect(throws: stubError) { _ = try await session.data(from: url("/own-error")) }
        await #expect(throws: stubError) { _ = try await session.download(from: url("/own-error")) }
        // The delegate, and the task's `error` property.
        let task = session.dataTask(with: url("/own-error"))
        task.resume()
        await delegate.waitForCompletions(1)
        #expect(task.error as? StubFailure == stubError)
        // A URLError keeps the user info the protocol gave it.
        let detailedOutcome = await session.runDataTask(URLRequest(url: url("/detailed-error")))
        let received = try #require(detailedOutcome.error as? URLError)
        #expect(received.code == .notConnectedToInternet)
        #expect(received.userInfo["stub.detail"] as? String == "airplane mode")
        session.invalidateAndCancel()
    }

    @Test func theDelegateDecidesAboutAProtocolsRedirect() async throws {
        StubProtocol.script("/moved-again", .redirect(to: "https://stub.test/plain-2"))
        StubProtocol.script("/plain-2", .plain(mimeType: "text/plain", body: Data("after".utf8)))
        let delegate = RecordingDelegate()
        let session = session(delegate: delegate)
        session.dataTask(with: url("/moved-again")).resume()
        await delegate.waitForCompletions(1)
        #expect(delegate.events.contains(.redirect("/plain-2")))
        #expect(delegate.body == Data("after".utf8))
        session.invalidateAndCancel()
    }

    /// A protocol redirects with `wasRedirectedTo:`; a 3xx it answers with `didReceive(_:cacheStoragePolicy:)` is
    /// the task's response, as on Darwin. (Courier followed its `Location`: the stub's own 302 never reached the app,
    /// the delegate was asked about a redirect Darwin never reports, and a target no protocol claims went out to the
    /// network from a test that stubs it.)
    @Test func aThreeHundredResponseFromAProtocolIsNotFollowed() async throws {
        StubProtocol.script(
            "/found",
            .respond(status: 302, headers: ["Location": "https://stub.test/plain-3"], parts: [Data("moved".utf8)]))
        StubProtocol.script("/plain-3", .plain(mimeType: "text/plain", body: Data("followed".utf8)))
        let delegate = RecordingDelegate()
        let session = session(delegate: delegate)
        let outcome = await session.runDataTask(URLRequest(url: url("/found")))
        #expect(outcome.error == nil)
        #expect(outcome.http?.statusCode == 302)
        #expect(outcome.data == Data("moved".utf8))
        session.dataTask(with: url("/found")).resume()
        await delegate.waitForCompletions(1)
        #expect(!delegate.events.contains(.redirect("/plain-3")))
        #expect(delegate.body == Data("moved".utf8))
        #expect(!StubProtocol.log.withLockedValue { $0.contains("start /plain-3 canonical=yes") })
        session.invalidateAndCancel()
    }

    /// An upload task's body is not in its request; Darwin hands it to the protocol as the request's body stream,
    /// which stubs read to check what was uploaded. (Courier gave the protocol the request alone: the body was
    /// nowhere, and a protocol that loads through a session of its own sent an empty upload.) A data task's
    /// `httpBody` reaches it both ways: as a body stream, which is how Darwin hands it over (its stubs read
    /// `httpBodyStream`; before, they saw no body), and as `httpBody`, which is how FoundationNetworking does.
    @Test func aBodyReachesTheProtocolAsItsBodyStream() async throws {
        StubProtocol.script("/echo", .echoBodyStream)
        StubProtocol.script("/data", .echoHTTPBody)
        let session = session()
        var request = URLRequest(url: url("/echo"))
        request.httpMethod = "POST"
        let (fromData, _) = try await session.upload(for: request, from: Data("uploaded".utf8))
        #expect(fromData == Data("uploaded".utf8))
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-protocol-\(UUID()).txt")
        try Data("from a file".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let (fromFile, _) = try await session.upload(for: request, fromFile: file)
        #expect(fromFile == Data("from a file".utf8))
        request.httpBody = Data("posted".utf8)
        #expect(try await session.data(for: request).0 == Data("posted".utf8))
        request.url = url("/data")
        #expect(try await session.data(for: request).0 == Data("posted".utf8))
        session.invalidateAndCancel()
    }

    /// Darwin sets `Content-Length` for a body whose length it knows, and a protocol sees it in its request (Supabase's
    /// request snapshots, recorded on Darwin through Mocker, carry it); the app's own value stays, and a body stream,
    /// whose length is unknown, gets none.
    @Test func aProtocolSeesTheContentLengthOfABodyOfKnownLength() async throws {
        StubProtocol.script("/length", .echoHeader("Content-Length"))
        let session = session()
        var request = URLRequest(url: url("/length"))
        request.httpMethod = "POST"
        #expect(try await session.data(for: request).0 == Data("none".utf8))
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-length-\(UUID()).txt")
        try Data("from a file".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(try await session.upload(for: request, fromFile: file).0 == Data("11".utf8))
        #expect(try await session.upload(for: request, from: Data("uploaded".utf8)).0 == Data("8".utf8))
        request.httpBody = Data("{\"a\":1}".utf8)
        #expect(try await session.data(for: request).0 == Data("7".utf8))
        request.setValue("07", forHTTPHeaderField: "content-length")
        #expect(try await session.data(for: request).0 == Data("07".utf8))
        request.setValue(nil, forHTTPHeaderField: "Content-Length")
        request.httpBodyStream = InputStream(data: Data("streamed".utf8))
        #expect(try await session.data(for: request).0 == Data("none".utf8))
        // An empty body: announced for a POST, not for a GET or a DELETE (as on the wire).
        request.httpBody = Data()
        #expect(try await session.data(for: request).0 == Data("0".utf8))
        request.httpMethod = "GET"
        #expect(try await session.data(for: request).0 == Data("none".utf8))
        request.httpMethod = "DELETE"
        #expect(try await session.data(for: request).0 == Data("none".utf8))
        session.invalidateAndCancel()
    }

    @Test func aProtocolsChallengeGoesToTheDelegateAndItsAnswerToTheSender() async throws {
        StubProtocol.script("/private", .challenge)
        let delegate = ChallengeAnsweringDelegate([
            (.useCredential, URLCredential(user: "alice", password: "pw", persistence: .none))
        ])
        let session = session(delegate: delegate)
        let outcome = await session.runDataTask(URLRequest(url: url("/private")))
        #expect(outcome.data == Data("user=alice".utf8))
        #expect(delegate.challenges.withLockedValue { $0.first?.protectionSpace.realm } == "stub")
        session.invalidateAndCancel()
    }

    @Test func cancellingStopsTheProtocol() async throws {
        StubProtocol.script("/silent", .silent)
        let session = session()
        let task = session.dataTask(with: url("/silent"))
        task.resume()
        try await waitUntil { StubProtocol.log.withLockedValue { $0.contains("start /silent canonical=yes") } }
        task.cancel()
        try await waitUntil { StubProtocol.log.withLockedValue { $0.contains("stop /silent") } }
        try await waitUntil { task.state == .completed }
        #expect((task.error as? URLError)?.code == .cancelled)
        session.invalidateAndCancel()
    }

    @Test func aValidCachedResponseIsServed() async throws {
        StubProtocol.script("/cached", .cachedIsValid)
        let session = session()
        let response = HTTPURLResponse(url: url("/cached"), statusCode: 200, httpVersion: nil, headerFields: [:])!
        var request = URLRequest(url: url("/cached"))
        request.setValue("yes", forHTTPHeaderField: "X-Canonical")
        session.configuration.urlCache?.storeCachedResponse(
            CachedURLResponse(response: response, data: Data("from cache".utf8)), for: request)
        #expect(await session.runDataTask(URLRequest(url: url("/cached"))).data == Data("from cache".utf8))
        session.invalidateAndCancel()
    }

    /// `cachedResponseIsValid` names the response that is valid: the task gets that one, also when the protocol keeps
    /// responses of its own and the session has no cache. (Courier answered with the response the protocol was
    /// created with, and failed the task with `resourceUnavailable` when there was none.)
    @Test func theCachedResponseTheProtocolNamesIsServed() async throws {
        StubProtocol.script("/own-cache", .ownCachedIsValid(Data("kept by the protocol".utf8)))
        let session = makeSession { configuration in
            configuration.protocolClasses = [StubProtocol.self]
            configuration.urlCache = nil
        }
        let outcome = await session.runDataTask(URLRequest(url: url("/own-cache")))
        #expect(outcome.error == nil)
        #expect(outcome.http?.statusCode == 200)
        #expect(outcome.data == Data("kept by the protocol".utf8))
        session.invalidateAndCancel()
    }

    /// Registered classes serve the shared session (sessions made with a configuration do not consult them: see
    /// ``ProtocolLookupTests``).
    @Test func registeredClassesServeTheSharedSession() async throws {
        StubProtocol.script("/registered", .plain(mimeType: "text/plain", body: Data("registered".utf8)))
        #expect(URLProtocol.registerClass(StubProtocol.self))
        defer { URLProtocol.unregisterClass(StubProtocol.self) }
        let outcome = await URLSession.shared.runDataTask(URLRequest(url: url("/registered")))
        #expect(outcome.data == Data("registered".utf8))
    }

    @Test func suspendingHoldsTheProtocolsBodyUntilResumed() async throws {
        let parts = (0..<20).map { Data("part\($0);".utf8) }
        StubProtocol.script("/held", .respond(status: 200, headers: [:], parts: parts, delay: 0.005))
        let delegate = RecordingDelegate()
        let session = session(delegate: delegate)
        let task = session.dataTask(with: url("/held"))
        task.resume()
        try await waitUntil { delegate.body.count > 0 }
        task.suspend()
        // Parts already handed to the delegate queue still arrive (more of them on a loaded machine): count from
        // when the queue has run what it held.
        try await Task.sleep(for: .milliseconds(10))
        await withCheckedContinuation { continuation in session.delegateQueue.addOperation { continuation.resume() } }
        let seen = delegate.body.count
        try await Task.sleep(for: .milliseconds(150))
        #expect(delegate.body.count <= seen + 16)  // at most a part in flight when suspended
        task.resume()
        await delegate.waitForCompletions(1)
        #expect(delegate.body == parts.reduce(Data(), +))
        session.invalidateAndCancel()
    }

    /// Each load runs on a thread of its own (``StubProtocol`` checks its run loop), which ends once the load did:
    /// a session loading through a custom protocol all day must not gather a thread per request.
    @Test func eachLoadsThreadEndsAfterTheLoad() async throws {
        StubProtocol.script("/brief", .respond(status: 200, headers: [:], parts: [Data("ok".utf8)]))
        let session = session()
        defer { session.invalidateAndCancel() }
        let before = StubProtocol.threadCount()
        for _ in 0..<30 {
            #expect(await session.runDataTask(URLRequest(url: url("/brief"))).data == Data("ok".utf8))
        }
        // The threads end after their load's last callback; give them a moment (other suites' loads come and go).
        let after = try await StubProtocol.threadCount(settlingAtMost: before + 3, polls: 50)
        #expect(after <= before + 3, "\(after - before) more protocol threads after 30 loads")
    }

}

/// An error type of the app's own, which a stub protocol fails with.
private struct StubFailure: Error, Equatable {
    let quota: Int
}
