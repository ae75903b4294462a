import Foundation

/// The command line of a client executable, as `run.sh` writes it:
///
///     courier-bench --scenario b --base http://127.0.0.1:PORT --tls-base https://127.0.0.1:PORT
///         --h2-base https://127.0.0.1:PORT --proxy http://127.0.0.1:PORT --hold-base http://127.0.0.1:PORT
///         --cert cert.der --cert-pem cert.pem --requests 50000 --concurrency 64
///         --big-path /1g --big-size 1073741824 --upload-file up.bin --scratch DIR
public struct BenchmarkOptions: Sendable {
    public var scenario: Scenario
    public var base: URL
    public var tlsBase: URL?
    /// The HTTPS listener that speaks HTTP/2 (scenario g).
    public var h2Base: URL?
    /// The HTTP forward proxy (scenario h), as `http://host:port`.
    public var proxy: HTTPProxy?
    /// A listener that accepts connections and reads requests but never answers (scenario k).
    public var holdBase: URL?
    public var certificateDER: URL?
    public var certificatePEM: URL?
    public var requests: Int
    public var concurrency: Int
    public var smallPath: String
    public var bigPath: String
    public var bigSize: Int64
    public var uploadFile: URL?
    public var scratch: URL

    /// Parses `arguments` (without the program name).
    public static func parse(_ arguments: [String]) throws -> BenchmarkOptions {
        var values: [String: String] = [:]
        var index = 0
        while index < arguments.count {
            let key = arguments[index]
            guard key.hasPrefix("--"), index + 1 < arguments.count else {
                throw UsageError(message: "expected --name value pairs, got \(key)")
            }
            values[String(key.dropFirst(2))] = arguments[index + 1]
            index += 2
        }
        func required(_ name: String) throws -> String {
            guard let value = values[name] else { throw UsageError(message: "missing --\(name)") }
            return value
        }
        func url(_ string: String) throws -> URL {
            guard let url = URL(string: string) else { throw UsageError(message: "not a URL: \(string)") }
            return url
        }
        func proxy(_ string: String) throws -> HTTPProxy {
            let address = try url(string)
            guard address.scheme == "http", let host = address.host, let port = address.port else {
                throw UsageError(message: "--proxy needs http://host:port, got \(string)")
            }
            return HTTPProxy(host: host, port: port)
        }
        guard let scenario = Scenario(rawValue: try required("scenario")) else {
            throw UsageError(message: "unknown scenario \(values["scenario"] ?? "")")
        }
        return BenchmarkOptions(
            scenario: scenario,
            base: try url(required("base")),
            tlsBase: try values["tls-base"].map(url),
            h2Base: try values["h2-base"].map(url),
            proxy: try values["proxy"].map(proxy),
            holdBase: try values["hold-base"].map(url),
            certificateDER: values["cert"].map { URL(fileURLWithPath: $0) },
            certificatePEM: values["cert-pem"].map { URL(fileURLWithPath: $0) },
            requests: Int(values["requests"] ?? "") ?? 2_000,
            concurrency: Int(values["concurrency"] ?? "") ?? 64,
            smallPath: values["small-path"] ?? "/64b",
            bigPath: values["big-path"] ?? "/1g",
            bigSize: Int64(values["big-size"] ?? "") ?? 1 << 30,
            uploadFile: values["upload-file"].map { URL(fileURLWithPath: $0) },
            scratch: URL(fileURLWithPath: values["scratch"] ?? NSTemporaryDirectory(), isDirectory: true)
        )
    }
}

/// A malformed command line.
public struct UsageError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }

    public init(message: String) {
        self.message = message
    }
}
