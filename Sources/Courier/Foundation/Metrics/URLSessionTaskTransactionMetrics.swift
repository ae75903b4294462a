import Foundation

/// Performance metrics for one request–response transaction of a session task.
///
/// `negotiatedTLSCipherSuite` is declared but stays `nil`: Courier's transport does not report the negotiated
/// cipher suite yet.
open class URLSessionTaskTransactionMetrics: NSObject, @unchecked Sendable {
    /// All the values of a transaction's metrics, filled in by the engine as the transaction progresses. Each field
    /// holds the value of the public property of the same name.
    package struct Values: Sendable {
        package var request: URLRequest
        package var response: URLResponse?
        package var fetchStartDate: Date?
        package var domainLookupStartDate: Date?
        package var domainLookupEndDate: Date?
        package var connectStartDate: Date?
        package var secureConnectionStartDate: Date?
        package var secureConnectionEndDate: Date?
        package var connectEndDate: Date?
        package var requestStartDate: Date?
        package var requestEndDate: Date?
        package var responseStartDate: Date?
        package var responseEndDate: Date?
        package var networkProtocolName: String?
        package var isProxyConnection = false
        package var isReusedConnection = false
        package var resourceFetchType: URLSessionTaskMetrics.ResourceFetchType = .unknown
        package var countOfRequestHeaderBytesSent: Int64 = 0
        package var countOfRequestBodyBytesSent: Int64 = 0
        package var countOfRequestBodyBytesBeforeEncoding: Int64 = 0
        package var countOfResponseHeaderBytesReceived: Int64 = 0
        package var countOfResponseBodyBytesReceived: Int64 = 0
        package var countOfResponseBodyBytesAfterDecoding: Int64 = 0
        package var localAddress: String?
        package var localPort: Int?
        package var remoteAddress: String?
        package var remotePort: Int?
        package var negotiatedTLSProtocolVersion: tls_protocol_version_t?
        package var negotiatedTLSCipherSuite: tls_ciphersuite_t?
        package var isCellular = false
        package var isExpensive = false
        package var isConstrained = false
        package var isMultipath = false
        package var domainResolutionProtocol: URLSessionTaskMetrics.DomainResolutionProtocol = .unknown

        /// Creates values for a transaction of `request`, with every other value unknown, zero or false.
        package init(request: URLRequest) {
            self.request = request
        }
    }

    private let values: Values

    /// Creates transaction metrics from their values.
    ///
    /// - Parameter values: The transaction's values.
    package init(values: Values) {
        self.values = values
        super.init()
    }

    /// The request of the transaction.
    open var request: URLRequest { values.request }
    /// The response of the transaction, or `nil` if none was received.
    open var response: URLResponse? { values.response }
    /// When the task started fetching the resource.
    open var fetchStartDate: Date? { values.fetchStartDate }
    /// When the name lookup for the resource started.
    open var domainLookupStartDate: Date? { values.domainLookupStartDate }
    /// When the name lookup for the resource finished.
    open var domainLookupEndDate: Date? { values.domainLookupEndDate }
    /// When the connection to the server started.
    open var connectStartDate: Date? { values.connectStartDate }
    /// When the TLS handshake started.
    open var secureConnectionStartDate: Date? { values.secureConnectionStartDate }
    /// When the TLS handshake finished.
    open var secureConnectionEndDate: Date? { values.secureConnectionEndDate }
    /// When the connection to the server was established.
    open var connectEndDate: Date? { values.connectEndDate }
    /// When the task started sending the request.
    open var requestStartDate: Date? { values.requestStartDate }
    /// When the task finished sending the request.
    open var requestEndDate: Date? { values.requestEndDate }
    /// When the first byte of the response was received.
    open var responseStartDate: Date? { values.responseStartDate }
    /// When the last byte of the response was received.
    open var responseEndDate: Date? { values.responseEndDate }
    /// The ALPN name of the protocol used, such as `"http/1.1"` or `"h2"`.
    open var networkProtocolName: String? { values.networkProtocolName }
    /// Whether the transaction went through a proxy.
    open var isProxyConnection: Bool { values.isProxyConnection }
    /// Whether the transaction reused an existing connection.
    open var isReusedConnection: Bool { values.isReusedConnection }
    /// How the resource was fetched.
    open var resourceFetchType: URLSessionTaskMetrics.ResourceFetchType { values.resourceFetchType }
    /// The bytes of request header sent.
    open var countOfRequestHeaderBytesSent: Int64 { values.countOfRequestHeaderBytesSent }
    /// The bytes of request body sent, after any encoding.
    open var countOfRequestBodyBytesSent: Int64 { values.countOfRequestBodyBytesSent }
    /// The bytes of request body before any encoding.
    open var countOfRequestBodyBytesBeforeEncoding: Int64 { values.countOfRequestBodyBytesBeforeEncoding }
    /// The bytes of response header received.
    open var countOfResponseHeaderBytesReceived: Int64 { values.countOfResponseHeaderBytesReceived }
    /// The bytes of response body received, before decoding.
    open var countOfResponseBodyBytesReceived: Int64 { values.countOfResponseBodyBytesReceived }
    /// The bytes of response body after decoding.
    open var countOfResponseBodyBytesAfterDecoding: Int64 { values.countOfResponseBodyBytesAfterDecoding }
    /// The local IP address of the connection.
    open var localAddress: String? { values.localAddress }
    /// The local port of the connection.
    open var localPort: Int? { values.localPort }
    /// The remote IP address of the connection.
    open var remoteAddress: String? { values.remoteAddress }
    /// The remote port of the connection.
    open var remotePort: Int? { values.remotePort }
    /// The TLS version negotiated for the connection, or `nil` without TLS.
    open var negotiatedTLSProtocolVersion: tls_protocol_version_t? { values.negotiatedTLSProtocolVersion }
    /// The TLS cipher suite negotiated for the connection, or `nil` without TLS or until the engine records it
    /// (Courier's transport does not report the negotiated suite yet, so this is `nil` today).
    open var negotiatedTLSCipherSuite: tls_ciphersuite_t? { values.negotiatedTLSCipherSuite }
    /// Whether the connection used a cellular interface (always false on Linux).
    open var isCellular: Bool { values.isCellular }
    /// Whether the connection used an expensive interface.
    open var isExpensive: Bool { values.isExpensive }
    /// Whether the connection used an interface in Low Data Mode.
    open var isConstrained: Bool { values.isConstrained }
    /// Whether the connection used Multipath TCP.
    open var isMultipath: Bool { values.isMultipath }
    /// The protocol used to resolve the domain name.
    open var domainResolutionProtocol: URLSessionTaskMetrics.DomainResolutionProtocol {
        values.domainResolutionProtocol
    }
}
