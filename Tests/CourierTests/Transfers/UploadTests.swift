import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

@Suite("Uploads")
struct UploadTests {
    @Test(arguments: [0, 1, 1 << 20])
    func dataUploadsArriveByteExact(length: Int) async throws {
        try await withServer { server in
            server.route("/up", method: "POST", response: .status(201))
            let body = MockBody.patternBytes(offset: 0, count: length)
            var request = URLRequest(url: server.url("/up"))
            request.httpMethod = "POST"
            request.httpBody = Data("ignored: the upload body wins".utf8)
            let delegate = RecordingDelegate()
            let session = makeSession(delegate: delegate)
            session.uploadTask(with: request, from: body).resume()
            await delegate.waitForCompletions()
            let recorded = try #require(server.requests(path: "/up").first)
            #expect(recorded.bodyLength == length)
            #expect(recorded.bodySHA256 == sha256Hex(body))
            let sent = delegate.events.compactMap { event -> (Int64, Int64, Int64)? in
                if case .sent(let a, let b, let c) = event { return (a, b, c) }
                return nil
            }
            if length > 0 {
                #expect(sent.last?.1 == Int64(length))
                #expect(sent.allSatisfy { $0.2 == Int64(length) })
                #expect(sent.map(\.0).reduce(0, +) == Int64(length))
            } else {
                #expect(sent.isEmpty)
            }
            #expect(delegate.events.last == .complete(nil))
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func hundredMebibyteFileUploadStreamsFromDisk(over wire: WireProtocol) async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let length = 100 << 20
        let (file, digest) = try writePatternFile(length: length, in: directory)
        try await withServer(wire) { server in
            server.route("/big", method: "PUT", response: .status(204))
            var request = URLRequest(url: server.url("/big"))
            request.httpMethod = "PUT"
            let session = makeSession()
            // The handler is awaited: the task's state turns `.completed` before the handler runs, so a test that
            // only polled the state could end before these checks.
            var task: URLSessionUploadTask!
            let outcome: DataOutcome = await withCheckedContinuation { continuation in
                task = session.uploadTask(with: request, fromFile: file) { data, response, error in
                    continuation.resume(
                        returning: DataOutcome(data: data, response: response, error: error, onDelegateQueue: true))
                }
                task.resume()
            }
            #expect(outcome.error == nil)
            #expect(outcome.http?.statusCode == 204)
            #expect(task.state == .completed)
            let recorded = try #require(server.requests(path: "/big").first)
            #expect(recorded.bodyLength == length)
            #expect(recorded.bodySHA256 == digest)
            #expect(recorded.header("Content-Length") == String(length))
            #expect(task.countOfBytesSent == Int64(length))
            #expect(task.countOfBytesExpectedToSend == Int64(length))
            #expect(task.progress.completedUnitCount == Int64(length))
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func asyncUploadFromFile(over wire: WireProtocol) async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (file, digest) = try writePatternFile(length: 300_000, in: directory)
        try await withServer(wire) { server in
            server.route("/f", method: "POST", response: .ok("stored"))
            var request = URLRequest(url: server.url("/f"))
            request.httpMethod = "POST"
            let (data, response) = try await makeSession().upload(for: request, fromFile: file)
            #expect(data == Data("stored".utf8))
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(server.requests.first?.bodySHA256 == digest)
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func missingFileFailsClearly(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            var request = URLRequest(url: server.url("/f"))
            request.httpMethod = "POST"
            let missing = URL(fileURLWithPath: "/nonexistent/courier/\(UUID().uuidString)")
            await #expect(throws: URLError.self) { try await makeSession().upload(for: request, fromFile: missing) }
            do {
                _ = try await makeSession().upload(for: request, fromFile: missing)
            } catch let error as URLError {
                #expect(error.code == .fileDoesNotExist)
            }
            #expect(server.requests.isEmpty)
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func httpBodyStreamOnADataTaskStreamsChunked(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.route("/s", method: "POST", response: .status(200))
            let body = MockBody.patternBytes(offset: 0, count: 200_000)
            var request = URLRequest(url: server.url("/s"))
            request.httpMethod = "POST"
            request.httpBodyStream = InputStream(data: body)
            let outcome = await makeSession().runDataTask(request)
            #expect(outcome.error == nil)
            let recorded = try #require(server.requests.first)
            #expect(recorded.bodySHA256 == sha256Hex(body))
            // Over HTTP/1.1 a body of unknown length is chunked; HTTP/2 frames it in DATA frames, with no length.
            #expect(recorded.header("Transfer-Encoding") == (wire == .http1 ? "chunked" : nil))
            #expect(recorded.header("Content-Length") == nil)
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func streamedUploadAsksTheDelegateForEveryPass(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.route("/old", method: "PUT", response: MockResponse(status: 307, headers: [("Location", "/new")]))
            server.route("/new", method: "PUT", response: .status(201))
            let body = MockBody.patternBytes(offset: 0, count: 70_000)
            let delegate = StreamProvidingDelegate(body: body)
            let session = makeSession(delegate: delegate)
            var request = URLRequest(url: server.url("/old"))
            request.httpMethod = "PUT"
            request.setValue(String(body.count), forHTTPHeaderField: "Content-Length")
            let task = session.uploadTask(withStreamedRequest: request)
            task.resume()
            await delegate.recorder.waitForCompletions()
            #expect(delegate.requests.withLockedValue { $0 } == 2)
            #expect(server.requests(path: "/old").first?.bodySHA256 == sha256Hex(body))
            #expect(server.requests(path: "/new").first?.bodySHA256 == sha256Hex(body))
            #expect(task.countOfBytesExpectedToSend == Int64(body.count))
            #expect((task.response as? HTTPURLResponse)?.statusCode == 201)
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func streamedUploadWithoutAStreamFailsWithBodyStreamExhausted(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.route("/s", method: "PUT", response: .status(201))
            var request = URLRequest(url: server.url("/s"))
            request.httpMethod = "PUT"
            let outcome: URLError? = await withCheckedContinuation { continuation in
                let delegate = CompletionOnlyDelegate { continuation.resume(returning: $0) }
                let session = makeSession(delegate: delegate)
                session.uploadTask(withStreamedRequest: request).resume()
            }
            #expect(outcome?.code == .requestBodyStreamExhausted)
        }
    }

    /// A body stream the app closed before handing it over reads -1 with no error. Foundation on Linux traps when
    /// such a stream's `streamError` is read; before, the read's failure path did so and the process crashed.
    @Test func aClosedBodyStreamFailsTheTaskWithBodyStreamExhausted() async throws {
        try await withServer { server in
            server.route("/s", method: "PUT", response: .status(201))
            let stream = InputStream(data: Data("already read".utf8))
            stream.open()
            stream.close()
            var request = URLRequest(url: server.url("/s"))
            request.httpMethod = "PUT"
            request.httpBodyStream = stream
            let outcome: URLError? = await withCheckedContinuation { continuation in
                let delegate = CompletionOnlyDelegate { continuation.resume(returning: $0) }
                makeSession(delegate: delegate).dataTask(with: request).resume()
            }
            #expect(outcome?.code == .requestBodyStreamExhausted)
            #expect(server.requests(path: "/s").allSatisfy { $0.body.isEmpty })
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func expectContinueWaitsForTheServer(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.route("/e", method: "POST", response: .ok("ok"))
            let body = MockBody.patternBytes(offset: 0, count: 50_000)
            var request = URLRequest(url: server.url("/e"))
            request.httpMethod = "POST"
            request.setValue("100-continue", forHTTPHeaderField: "Expect")
            let session = makeSession()
            let outcome: DataOutcome = await withCheckedContinuation { continuation in
                session.uploadTask(with: request, from: body) { data, response, error in
                    continuation.resume(
                        returning: DataOutcome(data: data, response: response, error: error, onDelegateQueue: true)
                    )
                }.resume()
            }
            #expect(outcome.http?.statusCode == 200)
            #expect(outcome.data == Data("ok".utf8))
            #expect(server.requests.first?.bodySHA256 == sha256Hex(body))
        }
    }
}

extension UploadTests {
    @Test(arguments: [50, 150])
    func aStreamThatDisagreesWithItsContentLengthFailsWithoutHanging(actual: Int) async throws {
        try await withServer { server in
            server.route("/s", method: "PUT", response: .status(201))
            var request = URLRequest(url: server.url("/s"))
            request.httpMethod = "PUT"
            request.setValue("100", forHTTPHeaderField: "Content-Length")
            request.httpBodyStream = InputStream(data: Data(repeating: 7, count: actual))
            // Long enough that a loaded machine (the body is read in a Swift task) cannot reach it; a hang still ends
            // in a timeout, which fails the test.
            var bounded = request
            bounded.timeoutInterval = 30
            let outcome = await makeSession().runDataTask(bounded)
            #expect(outcome.urlError != nil)
            #expect(outcome.urlError?.code != .timedOut)
            #expect(server.requests.isEmpty)
        }
    }
}

/// Gives a fresh stream over `body` for each needNewBodyStream and counts the requests.
final class StreamProvidingDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    let body: Data
    let requests = NIOLockedValueBox(0)
    let recorder = RecordingDelegate()

    init(body: Data) { self.body = body }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        needNewBodyStream completionHandler: @escaping @Sendable (InputStream?) -> Void
    ) {
        requests.withLockedValue { $0 += 1 }
        completionHandler(InputStream(data: body))
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        recorder.urlSession(session, task: task, didCompleteWithError: error)
    }
}

/// Reports only the completion.
final class CompletionOnlyDelegate: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    let done: @Sendable (URLError?) -> Void
    init(_ done: @escaping @Sendable (URLError?) -> Void) { self.done = done }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        done(error as? URLError)
    }
}

extension UploadTests {
    /// A `Content-Length` the app wrote with a sign is no length (RFC 9110 §8.6: digits only): the stream's body goes
    /// framed by itself (chunked over HTTP/1.1), complete, and `Content-Length: -5` never reaches the wire.
    @Test(arguments: ["-5", "+5"])
    func aSignedContentLengthIsNoLengthAndTheStreamGoesFramedByItself(declared: String) async throws {
        try await withServer { server in
            server.route("/s", method: "POST", response: .status(200))
            var request = URLRequest(url: server.url("/s"))
            request.httpMethod = "POST"
            request.setValue(declared, forHTTPHeaderField: "Content-Length")
            request.httpBodyStream = InputStream(data: Data("hello".utf8))
            request.timeoutInterval = 30
            let outcome = await makeSession().runDataTask(request)
            #expect(outcome.error == nil)
            let recorded = try #require(server.requests.first)
            #expect(recorded.body == Data("hello".utf8))
            #expect(recorded.header("Content-Length") == nil)
            #expect(recorded.header("Transfer-Encoding") == "chunked")
        }
    }
}
