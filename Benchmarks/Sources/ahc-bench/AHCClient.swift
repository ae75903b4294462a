import AsyncHTTPClient
import BenchmarkCore
import Foundation
import NIOCore
import NIOFileSystem
import NIOHTTP1
import NIOPosix
import NIOSSL

/// async-http-client 1.37, written as its documentation shows: the async/await API for requests and
/// streaming, `FileDownloadDelegate` for downloads to a file, and a body streamed from NIO's file system for
/// uploads.
final class AHCClient: BenchmarkClient {
    static let name = "ahc"

    private let client: HTTPClient
    private let scratch: URL
    /// Scenario (g): every response reports the HTTP version it came over.
    private let reportsProtocol: Bool
    /// Scenario (h): responses are checked for the proxy's header.
    private let checksProxy: Bool

    init(settings: ClientSettings) async throws {
        scratch = settings.scratchDirectory
        var tls = TLSConfiguration.makeClientConfiguration()
        if let der = settings.trustedCertificateDER {
            let certificate = try NIOSSLCertificate(bytes: [UInt8](der), format: .der)
            tls.additionalTrustRoots = [.certificates([certificate])]
        }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.connectionPool = .init(
            idleTimeout: .seconds(60),
            concurrentHTTP1ConnectionsPerHostSoftLimit: settings.maximumConnectionsPerHost
        )
        // HTTP/2 needs no setting: `httpVersion` is `.automatic` by default (ALPN offers h2, then http/1.1).
        if let proxy = settings.proxy {
            configuration.proxy = .server(host: proxy.host, port: proxy.port)
            // A proxy that refuses the connection fails the run at once rather than being retried until the
            // request's deadline.
            configuration.connectionPool.retryConnectionEstablishment = false
        }
        reportsProtocol = settings.scenario == .g
        checksProxy = settings.proxy != nil
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    func get(_ url: URL) async throws -> Outcome {
        let response: HTTPClientResponse
        do {
            response = try await client.execute(HTTPClientRequest(url: url.absoluteString), timeout: .seconds(120))
        } catch let error as HTTPClientError where checksProxy && error == .invalidProxyResponse {
            // async-http-client opens a CONNECT tunnel through an HTTP proxy for every target, plain http too;
            // nginx, a forwarding proxy of absolute-form requests, has no CONNECT and answers 400.
            throw ScenarioUnsupported(
                kind: "n/a",
                reason: "async-http-client tunnels every request through an HTTP proxy with CONNECT, plain http "
                    + "included, and the benchmark's proxy (nginx, absolute-form forwarding) refuses CONNECT: "
                    + "HTTPClientError.invalidProxyResponse"
            )
        }
        let body = try await response.body.collect(upTo: 1 << 20)
        var outcome = Outcome(status: Int(response.status.code), bytes: Int64(body.readableBytes))
        if reportsProtocol {
            let version = response.version
            outcome.protocolName = version == .http2 ? "h2" : "http/\(version.major).\(version.minor)"
        }
        if checksProxy {
            outcome.viaProxy = response.headers.contains(name: viaProxyHeader)
        }
        return outcome
    }

    func download(_ url: URL) async throws -> Outcome {
        let path = scratch.appendingPathComponent("ahc-download-\(getpid())-\(url.lastPathComponent)").path
        let delegate = try FileDownloadDelegate(path: path)
        let request = try HTTPClient.Request(url: url.absoluteString)
        let progress = try await client.execute(request: request, delegate: delegate).futureResult.get()
        let file = URL(fileURLWithPath: path)
        return Outcome(status: Int(progress.head.status.code), bytes: try fileSize(file), file: file)
    }

    func stream(_ url: URL) async throws -> Outcome {
        let response = try await client.execute(HTTPClientRequest(url: url.absoluteString), timeout: .seconds(600))
        var bytes: Int64 = 0
        for try await part in response.body {
            bytes += Int64(part.readableBytes)
        }
        return Outcome(status: Int(response.status.code), bytes: bytes)
    }

    func upload(_ url: URL, file: URL) async throws -> Outcome {
        let size = try fileSize(file)
        return try await FileSystem.shared.withFileHandle(forReadingAt: FilePath(file.path)) { handle in
            var request = HTTPClientRequest(url: url.absoluteString)
            request.method = .PUT
            request.body = .stream(handle.readChunks(in: 0..<size), length: .known(size))
            let response = try await client.execute(request, timeout: .seconds(600))
            _ = try await response.body.collect(upTo: 1 << 20)
            let received = response.headers.first(name: receivedLengthHeader).flatMap { Int64($0) } ?? -1
            return Outcome(status: Int(response.status.code), bytes: received)
        }
    }

    func queueHeld(_ url: URL, count: Int, sample: () -> Void) async throws {
        // The future-based API: a task (with a cancel) per request, no Swift task.
        var tasks: [HTTPClient.Task<HTTPClient.Response>] = []
        tasks.reserveCapacity(count)
        try Self.startAll(count: count, sample: sample) { _ in
            let request = try HTTPClient.Request(url: url.absoluteString)
            tasks.append(
                client.execute(
                    request: request, delegate: ResponseAccumulator(request: request),
                    deadline: .now() + .seconds(600)))
        }
        try await Task.sleep(for: Self.settle)
        sample()
        for task in tasks { task.cancel() }
        let held = HeldQueueCheck()
        for task in tasks {
            do {
                let response = try await task.futureResult.get()
                held.requestEnded(cancelled: false, how: "a response with status \(response.status.code)")
            } catch {
                held.requestEnded(cancelled: error as? HTTPClientError == .cancelled, how: "\(error)")
            }
        }
        try held.requireAllHeld(count: count)
    }

    func shutdown() async throws {
        try await client.shutdown()
    }
}
