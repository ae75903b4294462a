import Foundation

/// Performance metrics collected for a session task: one transaction per request sent, including redirects.
open class URLSessionTaskMetrics: NSObject, @unchecked Sendable {
    private let storedTransactionMetrics: [URLSessionTaskTransactionMetrics]
    private let storedTaskInterval: DateInterval
    private let storedRedirectCount: Int

    /// Creates task metrics, as the session does when a task completes.
    ///
    /// - Parameters:
    ///   - transactionMetrics: The metrics of each request–response transaction, in order.
    ///   - taskInterval: The interval from the task's creation to its completion.
    ///   - redirectCount: The number of redirects the task followed.
    package init(
        transactionMetrics: [URLSessionTaskTransactionMetrics], taskInterval: DateInterval, redirectCount: Int
    ) {
        storedTransactionMetrics = transactionMetrics
        storedTaskInterval = taskInterval
        storedRedirectCount = redirectCount
        super.init()
    }

    /// The metrics of each request–response transaction made during the task, in order.
    open var transactionMetrics: [URLSessionTaskTransactionMetrics] { storedTransactionMetrics }

    /// The interval from the task's creation to the moment its metrics were collected.
    open var taskInterval: DateInterval { storedTaskInterval }

    /// The number of redirects followed during the task.
    open var redirectCount: Int { storedRedirectCount }
}

extension URLSessionTaskMetrics {
    /// How a transaction's resource was fetched.
    public enum ResourceFetchType: Int, Sendable {
        /// The manner of fetching is unknown.
        case unknown = 0
        /// The resource was loaded over the network.
        case networkLoad = 1
        /// The resource was pushed by the server.
        case serverPush = 2
        /// The resource was retrieved from the local cache.
        case localCache = 3
    }

    /// The protocol used to resolve a transaction's domain name.
    public enum DomainResolutionProtocol: Int, Sendable {
        /// The protocol is unknown.
        case unknown = 0
        /// DNS over UDP.
        case udp = 1
        /// DNS over TCP.
        case tcp = 2
        /// DNS over TLS.
        case tls = 3
        /// DNS over HTTPS.
        case https = 4
    }
}
