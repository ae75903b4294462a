import Foundation

/// How a client is set up for one run.
public struct ClientSettings: Sendable {
    /// The scenario the client will run (a user sets a session up for the job at hand).
    public var scenario: Scenario
    /// The most connections the client may open to the server (`httpMaximumConnectionsPerHost` or the like).
    public var maximumConnectionsPerHost: Int
    /// A DER certificate to trust in addition to the system store (the benchmark's self-signed server), if any.
    public var trustedCertificateDER: Data?
    /// A PEM copy of the same certificate, for clients that take PEM.
    public var trustedCertificatePEMPath: String?
    /// Where a client may put downloaded files.
    public var scratchDirectory: URL
    /// The HTTP forward proxy that plain-http requests go through (scenario h), if any.
    public var proxy: HTTPProxy?
}

/// An HTTP forward proxy: the benchmark's nginx, which takes absolute-form requests and passes them on.
public struct HTTPProxy: Sendable {
    public var host: String
    public var port: Int
}

/// The response header the benchmark's proxy adds to every response it passes on: a response without it did not
/// come through the proxy.
public let viaProxyHeader = "X-Via-Proxy"

/// The response header in which the benchmark's HTTP/2 listener (scenario g) tells every response's protocol, as
/// nginx's `$server_protocol` (`HTTP/2.0`, `HTTP/1.1`).
public let protocolHeader = "X-Server-Protocol"

/// Protocol names as the clients report them (`Outcome.protocolName`).
public enum ProtocolName {
    /// ALPN's name for `server`, a `$server_protocol` value: `h2` for `HTTP/2.0`, `http/1.1` for `HTTP/1.1`.
    public static func from(server: String) -> String {
        switch server {
        case "HTTP/2.0": "h2"
        case "HTTP/1.1": "http/1.1"
        case "HTTP/1.0": "http/1.0"
        default: server
        }
    }
}

/// The response header in which the benchmark's nginx upload sink reports how many request bytes (head and
/// body) it read before answering.
public let receivedLengthHeader = "X-Received-Length"

/// The outcome of one request: what the checks look at.
public struct Outcome: Sendable {
    /// The HTTP status code.
    public var status: Int
    /// The number of body bytes received (or, for uploads, the number the server reports it received).
    public var bytes: Int64
    /// A downloaded file, removed by the harness after the clock stopped (as it removes curl's).
    public var file: URL?
    /// The protocol the response came over, as ALPN names it (`h2`, `http/1.1`), where the client looked: scenario
    /// (g) checks every one that is set and needs at least one. `nil`: the client did not look on this request.
    public var protocolName: String?
    /// Whether the response carried the proxy's `X-Via-Proxy` header (checked in scenario h).
    public var viaProxy: Bool

    public init(status: Int, bytes: Int64, file: URL? = nil, protocolName: String? = nil, viaProxy: Bool = false) {
        self.status = status
        self.bytes = bytes
        self.file = file
        self.protocolName = protocolName
        self.viaProxy = viaProxy
    }
}

/// A client that cannot do a scenario yet (Courier's not-yet-implemented features) or at all.
public struct ScenarioUnsupported: Error, CustomStringConvertible {
    /// `unsupported` (the client throws `URLError(.unsupportedURL)`) or `n/a` (the client cannot be set up for it).
    public var kind: String
    /// Why.
    public var reason: String

    public init(kind: String = "unsupported", reason: String) {
        self.kind = kind
        self.reason = reason
    }

    public var description: String { "\(kind): \(reason)" }
}

/// One HTTP client under test. Each client lives in its own executable so that names do not clash and each
/// process's CPU time and memory belong to one client only.
public protocol BenchmarkClient: Sendable {
    /// The name used in results (`courier`, `foundation`, `ahc`).
    static var name: String { get }

    /// Creates the client (a session, an `HTTPClient`) for one run.
    init(settings: ClientSettings) async throws

    /// GETs `url` and collects the whole body in memory.
    func get(_ url: URL) async throws -> Outcome

    /// Downloads `url` to a file; returns the size of the file the client produced and the file, which the
    /// harness removes once the clock has stopped.
    func download(_ url: URL) async throws -> Outcome

    /// GETs `url` and hands the body, piece by piece, to a handler that only counts it.
    func stream(_ url: URL) async throws -> Outcome

    /// PUTs the file at `file` to `url`; `bytes` in the outcome is what the server says it received.
    func upload(_ url: URL, file: URL) async throws -> Outcome

    /// Scenario (k): starts `count` GETs of `url`, at a server that never answers, the way the client queues work
    /// without a Swift task each (a data task with a completion handler, a future); calls `sample` after every 1,000
    /// started, after the last, and once more when the queue settled (``settle``); then cancels them all and returns
    /// when every one has ended.
    func queueHeld(_ url: URL, count: Int, sample: () -> Void) async throws

    /// Releases the client (shuts its event loops down, invalidates the session).
    func shutdown() async throws

    /// Scenario (l): downloads `url` to a file through a background session, whose transfer a daemon runs (Courier's
    /// `courierd`); the other clients have none.
    func backgroundDownload(_ url: URL) async throws -> Outcome
}

extension BenchmarkClient {
    public func backgroundDownload(_ url: URL) async throws -> Outcome {
        throw ScenarioUnsupported(kind: "n/a", reason: "\(Self.name) has no background sessions")
    }

    /// Calls `sample` after every 1,000 of `count` started by `start`, and once more after the last.
    public static func startAll(count: Int, sample: () -> Void, _ start: (Int) throws -> Void) rethrows {
        for index in 0..<count {
            try start(index)
            if (index + 1) % 1_000 == 0 { sample() }
        }
        if count % 1_000 != 0 { sample() }
    }

    /// How long a client lets its queue settle (connections opened, requests written) before the last sample.
    public static var settle: Duration { .milliseconds(300) }
}
