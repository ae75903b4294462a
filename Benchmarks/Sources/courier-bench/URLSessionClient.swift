// This one file is compiled twice: into `courier-bench` with `COURIER` defined (`import Courier`) and, through a
// symbolic link, into `foundation-bench` (`import FoundationNetworking`). Both clients run the very same user
// code; only the import differs, as it does for a user who switches.
import BenchmarkCore
import Foundation

#if COURIER
    import Courier
    #if COURIER_TELEMETRY
        import InMemoryTracing
        import MetricsTestKit
    #endif
#elseif canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A benchmark client on the URLSession API.
final class URLSessionClient: BenchmarkClient, @unchecked Sendable {
    #if COURIER_TELEMETRY
        static let name = "courier-telemetry"
    #elseif COURIER
        static let name = "courier"
    #else
        static let name = "foundation"
    #endif

    private let session: URLSession
    private let streamDelegate: StreamDelegate?
    /// Scenario (g): every response is checked for the protocol nginx says it was served over.
    private let checksProtocol: Bool
    /// Scenario (h): responses are checked for the proxy's header.
    private let checksProxy: Bool
    #if COURIER && !COURIER_TELEMETRY
        /// Scenario (l): a background session, attached before the clock starts.
        let background: BackgroundDownloader?
    #endif

    init(settings: ClientSettings) async throws {
        let configuration = URLSessionConfiguration.default
        configuration.httpMaximumConnectionsPerHost = settings.maximumConnectionsPerHost
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.timeoutIntervalForRequest = 120
        configuration.timeoutIntervalForResource = 600
        #if COURIER
            if let certificate = settings.trustedCertificateDER {
                configuration.courierAdditionalTrustedCertificates = [certificate]
            }
            #if COURIER_TELEMETRY
                // Every span and metric recorded in memory (spans kept, injections not recorded).
                configuration.courierTelemetry.tracer = InMemoryTracer(
                    recordInjections: false, recordExtractions: false)
                configuration.courierTelemetry.metricsFactory = TestMetrics()
            #endif
        #endif
        // Darwin's keys; plain-http requests go to the proxy in absolute form.
        if let proxy = settings.proxy {
            configuration.connectionProxyDictionary = [
                "HTTPEnable": 1, "HTTPProxy": proxy.host, "HTTPPort": proxy.port,
            ]
        }
        checksProxy = settings.proxy != nil
        checksProtocol = settings.scenario == .g
        // Scenario (d) is the delegate way of reading a body: a data task whose delegate sees every piece.
        streamDelegate = settings.scenario == .d ? StreamDelegate() : nil
        session = URLSession(configuration: configuration, delegate: streamDelegate, delegateQueue: nil)
        #if COURIER && !COURIER_TELEMETRY
            background = settings.scenario == .l ? await BackgroundDownloader(scratch: settings.scratchDirectory) : nil
        #endif
    }

    func get(_ url: URL) async throws -> Outcome {
        let (data, response) = try await translatingErrors {
            try await session.data(for: URLRequest(url: url))
        }
        let http = response as? HTTPURLResponse
        var outcome = Outcome(status: http?.statusCode ?? 0, bytes: Int64(data.count))
        if checksProtocol {
            // What the server saw, on every response: no task delegate (whose metrics would tell Courier's own view
            // of one request, but would also make Courier evaluate that connection's trust itself).
            outcome.protocolName = http?.value(forHTTPHeaderField: protocolHeader).map(ProtocolName.from(server:))
        }
        if checksProxy {
            outcome.viaProxy = http?.value(forHTTPHeaderField: viaProxyHeader) != nil
            // FoundationNetworking does not honour connectionProxyDictionary: its requests go straight to the
            // origin, and the run is recorded as n/a rather than failed.
            if Self.name == "foundation" && !outcome.viaProxy {
                throw ScenarioUnsupported(
                    kind: "n/a",
                    reason: "FoundationNetworking ignores connectionProxyDictionary: the response came straight from "
                        + "the origin, without the proxy's \(viaProxyHeader) header"
                )
            }
        }
        return outcome
    }

    func download(_ url: URL) async throws -> Outcome {
        let (location, response) = try await translatingErrors {
            try await session.download(for: URLRequest(url: url))
        }
        let size = try fileSize(location)
        return Outcome(status: (response as? HTTPURLResponse)?.statusCode ?? 0, bytes: size, file: location)
    }

    func stream(_ url: URL) async throws -> Outcome {
        guard let streamDelegate else { throw UsageError(message: "the session was not made for streaming") }
        let task = session.dataTask(with: URLRequest(url: url))
        return try await translatingErrors {
            try await withCheckedThrowingContinuation { continuation in
                streamDelegate.watch(task, continuation)
                task.resume()
            }
        }
    }

    func upload(_ url: URL, file: URL) async throws -> Outcome {
        var request = URLRequest(url: url)
        request.httpMethod = "PUT"
        let (_, response) = try await translatingErrors { try await session.upload(for: request, fromFile: file) }
        let http = response as? HTTPURLResponse
        let received = http?.value(forHTTPHeaderField: receivedLengthHeader).flatMap { Int64($0) } ?? -1
        return Outcome(status: http?.statusCode ?? 0, bytes: received)
    }

    func queueHeld(_ url: URL, count: Int, sample: () -> Void) async throws {
        // A data task with a completion handler each, resumed at once: the session queues what its 64 connections
        // cannot carry. Nothing of the harness's is kept per request.
        let ended = DispatchGroup()
        let held = HeldQueueCheck()
        Self.startAll(count: count, sample: sample) { _ in
            ended.enter()
            session.dataTask(with: url) { _, _, error in
                let cancelled = (error as? URLError)?.code == .cancelled
                held.requestEnded(cancelled: cancelled, how: error.map { "\($0)" } ?? "a response")
                ended.leave()
            }.resume()
        }
        try await Task.sleep(for: Self.settle)
        sample()
        session.invalidateAndCancel()
        await withCheckedContinuation { continuation in
            ended.notify(queue: .global()) { continuation.resume() }
        }
        try held.requireAllHeld(count: count)
    }

    func shutdown() async throws {
        session.finishTasksAndInvalidate()
    }

    /// Turns `URLError(.unsupportedURL)` (Courier's answer for features that have not landed yet) into a
    /// "not supported yet" result, and FoundationNetworking's certificate failures into "n/a".
    private func translatingErrors<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as URLError where error.code == .unsupportedURL {
            throw ScenarioUnsupported(kind: "unsupported", reason: "\(error.localizedDescription) [\(error.code)]")
        } catch  where Self.name == "foundation" && Self.isTrustFailure(error) {
            throw ScenarioUnsupported(
                kind: "n/a",
                reason: "FoundationNetworking cannot be given a custom CA: libcurl's CAINFO is fixed to the system "
                    + "bundle and server-trust challenges are not delivered to the delegate; the request failed with "
                    + "\"\(error.localizedDescription)\""
            )
        }
    }

    private static func isTrustFailure(_ error: any Error) -> Bool {
        let trustCodes: [URLError.Code] = [
            .serverCertificateUntrusted, .serverCertificateHasUnknownRoot, .serverCertificateHasBadDate,
            .secureConnectionFailed, .serverCertificateNotYetValid,
        ]
        if let error = error as? URLError, trustCodes.contains(error.code) { return true }
        // libcurl's verification failures reach FoundationNetworking's users as NSURLErrorDomain code -1.
        let nsError = error as NSError
        return nsError.domain == NSURLErrorDomain && nsError.localizedDescription.contains("SSL certificate problem")
    }
}

/// The data delegate of scenario (d): counts and discards every piece of the body.
private final class StreamDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private struct Watched {
        var bytes: Int64 = 0
        var continuation: CheckedContinuation<Outcome, any Error>
    }

    private let lock = NSLock()
    private var watched: [Int: Watched] = [:]

    func watch(_ task: URLSessionTask, _ continuation: CheckedContinuation<Outcome, any Error>) {
        lock.lock()
        watched[task.taskIdentifier] = Watched(continuation: continuation)
        lock.unlock()
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        lock.lock()
        watched[dataTask.taskIdentifier]?.bytes += Int64(data.count)
        lock.unlock()
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        lock.lock()
        let entry = watched.removeValue(forKey: task.taskIdentifier)
        lock.unlock()
        guard let entry else { return }
        if let error {
            entry.continuation.resume(throwing: error)
        } else {
            let status = (task.response as? HTTPURLResponse)?.statusCode ?? 0
            entry.continuation.resume(returning: Outcome(status: status, bytes: entry.bytes))
        }
    }
}
