import CourierTransport
import Foundation

extension URLSessionTaskMetrics {
    /// The metrics of a task from the engine's record of its transactions.
    convenience init(_ record: TaskMetricsRecord, taskInterval: DateInterval) {
        self.init(
            transactionMetrics: record.transactions.map(URLSessionTaskTransactionMetrics.init),
            taskInterval: taskInterval,
            redirectCount: record.redirectCount)
    }
}

extension URLSessionTaskTransactionMetrics {
    /// One transaction's metrics: the network's from its timeline; a cached or locally produced response has only
    /// its request, response and fetch start (no connection, no bytes on a wire).
    convenience init(_ record: TransactionRecord) {
        var values = Values(request: record.request)
        values.response = record.response
        values.fetchStartDate = record.fetchStart
        switch record.origin {
        case .network: values.resourceFetchType = .networkLoad
        case .cache: values.resourceFetchType = .localCache
        case .local: values.resourceFetchType = .unknown
        }
        if let timeline = record.timeline {
            values.fetchStartDate = timeline.fetchStart
            values.connectStartDate = timeline.connectStart
            // Darwin's connection is established when its TLS handshake is done: the TCP connect, then TLS, both
            // inside connectStart…connectEnd.
            values.connectEndDate = timeline.secureConnectionEnd ?? timeline.connectEnd
            values.secureConnectionStartDate = timeline.secureConnectionStart
            values.secureConnectionEndDate = timeline.secureConnectionEnd
            values.requestStartDate = timeline.requestStart
            values.requestEndDate = timeline.requestEnd
            values.responseStartDate = timeline.responseStart
            values.responseEndDate = timeline.responseEnd
            values.networkProtocolName = timeline.protocolName
            values.isReusedConnection = timeline.isReusedConnection
            values.isProxyConnection = timeline.isProxyConnection
            values.localAddress = timeline.localAddress
            values.localPort = timeline.localPort
            values.remoteAddress = timeline.remoteAddress
            values.remotePort = timeline.remotePort
            values.negotiatedTLSProtocolVersion = timeline.tlsProtocolVersion.flatMap(Self.tlsVersion(named:))
            values.countOfRequestHeaderBytesSent = timeline.requestHeaderBytesSent
            values.countOfRequestBodyBytesSent = timeline.requestBodyBytesSent
            values.countOfRequestBodyBytesBeforeEncoding = timeline.requestBodyBytesSent
            values.countOfResponseHeaderBytesReceived = timeline.responseHeaderBytesReceived
            values.countOfResponseBodyBytesReceived = timeline.responseBodyBytesReceived
            values.countOfResponseBodyBytesAfterDecoding = timeline.responseBodyBytesDecoded
        }
        self.init(values: values)
    }

    /// The version for the transport's name of it (`TLSv1.3`).
    private static func tlsVersion(named name: String) -> tls_protocol_version_t? {
        switch name {
        case "TLSv1.0": return .TLSv10
        case "TLSv1.1": return .TLSv11
        case "TLSv1.2": return .TLSv12
        case "TLSv1.3": return .TLSv13
        default: return nil
        }
    }
}
