import Courier
import Foundation
import NIOConcurrencyHelpers

/// A network stub written only against the public API, the way Darwin apps stub `URLSession` (OHHTTPStubs, Mocker):
/// a `URLProtocol` that claims requests to `stub.test` and answers each path from a script.
final class StubProtocol: URLProtocol, @unchecked Sendable {
    enum Script: Sendable {
        /// A response, then the body in parts, `delay` apart (sent from run-loop timers on the protocol's thread).
        case respond(status: Int, headers: [String: String], parts: [Data], delay: TimeInterval = 0)
        /// A plain, non-HTTP response.
        case plain(mimeType: String, body: Data)
        case redirect(to: String)
        case fail(URLError.Code)
        /// A failure with an error of the app's own (any type), passed to the client as it is.
        case failWith(any Error)
        /// A Basic challenge; the body says which user answered it.
        case challenge
        /// The cached response the protocol was given is declared valid.
        case cachedIsValid
        /// Nothing ever: for cancellation.
        case silent
        /// A 200 whose body is what the request's `httpBodyStream` held (`"no stream"` without one).
        case echoBodyStream
        /// A cached response the protocol makes itself (not the one it was given) is declared valid.
        case ownCachedIsValid(Data)
        /// A 200 whose body is the value of the request's header field of this name (`"none"` without one).
        case echoHeader(String)
        /// A 200 whose body is the request's `httpBody` (`"no body"` without one).
        case echoHTTPBody
    }

    static let scripts = NIOLockedValueBox<[String: Script]>([:])

    /// The threads of this process named as ``ProtocolThread`` names them.
    static func threadCount() -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.filter { task in
            let name = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)
            return name?.hasPrefix("courier.proto") == true
        }.count
    }

    /// ``threadCount()`` once it is at most `limit`, or after `polls` tenths of a second: ending threads take a
    /// moment, and other suites' loads come and go.
    static func threadCount(settlingAtMost limit: Int, polls: Int) async throws -> Int {
        var count = threadCount()
        for _ in 0..<polls where count > limit {
            try await Task.sleep(for: .milliseconds(100))
            count = threadCount()
        }
        return count
    }
    /// What the protocols saw: the thread's name, whether the run loop was running, and the calls made.
    static let log = NIOLockedValueBox<[String]>([])

    static func script(_ path: String, _ script: Script) {
        scripts.withLockedValue { $0[path] = script }
    }

    override class func canInit(with request: URLRequest) -> Bool {
        request.url?.host == "stub.test"
    }

    override class func canonicalRequest(for request: URLRequest) -> URLRequest {
        var canonical = request
        canonical.setValue("yes", forHTTPHeaderField: "X-Canonical")
        return canonical
    }

    private var timers: [Timer] = []

    override func startLoading() {
        let path = request.url?.path ?? ""
        Self.log.withLockedValue {
            $0.append("start \(path) canonical=\(request.value(forHTTPHeaderField: "X-Canonical") ?? "no")")
            // Called from the run loop itself (a timer fired), not from a queue: its mode is current.
            $0.append("run loop \(RunLoop.current.currentMode?.rawValue ?? "not running") task=\(task != nil)")
        }
        guard let client, let url = request.url else { return }
        switch Self.scripts.withLockedValue({ $0[path] }) ?? .fail(.fileDoesNotExist) {
        case .respond(let status, let headers, let parts, let delay):
            let response = HTTPURLResponse(
                url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: headers)!
            client.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
            guard delay > 0 else {
                for part in parts { client.urlProtocol(self, didLoad: part) }
                client.urlProtocolDidFinishLoading(self)
                return
            }
            // Timers on the current run loop: they fire only if the protocol's thread runs its run loop.
            for (index, part) in parts.enumerated() {
                // An explicit fire date: corelibs' Timer(timeInterval:repeats:) fires at once (Darwin's waits).
                let fireDate = Date(timeIntervalSinceNow: delay * Double(index + 1))
                let timer = Timer(fire: fireDate, interval: 0, repeats: false) { [self] _ in
                    client.urlProtocol(self, didLoad: part)
                    if index == parts.count - 1 { client.urlProtocolDidFinishLoading(self) }
                }
                RunLoop.current.add(timer, forMode: .default)
                timers.append(timer)
            }
        case .plain(let mimeType, let body):
            let response = URLResponse(
                url: url, mimeType: mimeType, expectedContentLength: body.count, textEncodingName: nil)
            client.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
            client.urlProtocol(self, didLoad: body)
            client.urlProtocolDidFinishLoading(self)
        case .redirect(let target):
            let response = HTTPURLResponse(
                url: url, statusCode: 302, httpVersion: "HTTP/1.1", headerFields: ["Location": target])!
            client.urlProtocol(self, wasRedirectedTo: URLRequest(url: URL(string: target)!), redirectResponse: response)
        case .fail(let code):
            client.urlProtocol(self, didFailWithError: URLError(code))
        case .failWith(let error):
            client.urlProtocol(self, didFailWithError: error)
        case .challenge:
            let space = URLProtectionSpace(
                host: "stub.test", port: 443, protocol: "https", realm: "stub",
                authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
            let sender = StubChallengeSender { [self] credential in
                let body = Data("user=\(credential?.user ?? "none")".utf8)
                let response = HTTPURLResponse(url: url, statusCode: 200, httpVersion: nil, headerFields: [:])!
                client.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
                client.urlProtocol(self, didLoad: body)
                client.urlProtocolDidFinishLoading(self)
            }
            client.urlProtocol(
                self,
                didReceive: URLAuthenticationChallenge(
                    protectionSpace: space, proposedCredential: nil, previousFailureCount: 0, failureResponse: nil,
                    error: nil, sender: sender))
        case .cachedIsValid:
            guard let cachedResponse else {
                return client.urlProtocol(self, didFailWithError: URLError(.resourceUnavailable))
            }
            client.urlProtocol(self, cachedResponseIsValid: cachedResponse)
        case .silent:
            break
        case .echoBodyStream:
            let response = HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: [:])!
            client.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
            client.urlProtocol(self, didLoad: request.httpBodyStream.map(Self.readAll) ?? Data("no stream".utf8))
            client.urlProtocolDidFinishLoading(self)
        case .echoHeader(let name):
            let response = HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: [:])!
            client.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
            client.urlProtocol(self, didLoad: Data((request.value(forHTTPHeaderField: name) ?? "none").utf8))
            client.urlProtocolDidFinishLoading(self)
        case .echoHTTPBody:
            let response = HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: [:])!
            client.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
            client.urlProtocol(self, didLoad: request.httpBody ?? Data("no body".utf8))
            client.urlProtocolDidFinishLoading(self)
        case .ownCachedIsValid(let body):
            let response = HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: [:])!
            client.urlProtocol(self, cachedResponseIsValid: CachedURLResponse(response: response, data: body))
        }
    }

    /// Everything a body stream holds, as a protocol on Darwin reads an upload's body.
    private static func readAll(_ stream: InputStream) -> Data {
        stream.open()
        defer { stream.close() }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = stream.read(&buffer, maxLength: buffer.count)
            guard count > 0 else { break }
            data.append(buffer, count: count)
        }
        return data
    }

    override func stopLoading() {
        for timer in timers { timer.invalidate() }
        Self.log.withLockedValue { $0.append("stop \(request.url?.path ?? "")") }
    }
}

/// A challenge sender that hands the answer to a closure.
final class StubChallengeSender: NSObject, URLAuthenticationChallengeSender, @unchecked Sendable {
    let answer: @Sendable (URLCredential?) -> Void

    init(_ answer: @escaping @Sendable (URLCredential?) -> Void) { self.answer = answer }

    func use(_ credential: URLCredential, for challenge: URLAuthenticationChallenge) { answer(credential) }
    func continueWithoutCredential(for challenge: URLAuthenticationChallenge) { answer(nil) }
    func cancel(_ challenge: URLAuthenticationChallenge) { answer(nil) }
}
