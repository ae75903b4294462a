import Courier
import Foundation
import Testing

@Suite("URLSessionTaskMetrics")
struct URLSessionTaskMetricsTests {
    @Test("Metrics expose the values the engine set")
    func values() throws {
        let request = URLRequest(url: try #require(URL(string: "https://example.com")))
        var values = URLSessionTaskTransactionMetrics.Values(request: request)
        #expect(values.resourceFetchType == .unknown)
        let start = Date(timeIntervalSince1970: 100)
        values.fetchStartDate = start
        values.networkProtocolName = "http/1.1"
        values.isReusedConnection = true
        values.resourceFetchType = .networkLoad
        values.countOfResponseBodyBytesReceived = 1234
        values.remotePort = 443
        values.negotiatedTLSProtocolVersion = .TLSv13
        values.domainResolutionProtocol = .udp
        let transaction = URLSessionTaskTransactionMetrics(values: values)
        #expect(transaction.request == request)
        #expect(transaction.response == nil)
        #expect(transaction.fetchStartDate == start)
        #expect(transaction.connectStartDate == nil)
        #expect(transaction.networkProtocolName == "http/1.1")
        #expect(transaction.isReusedConnection)
        #expect(!transaction.isProxyConnection)
        #expect(transaction.resourceFetchType == .networkLoad)
        #expect(transaction.countOfResponseBodyBytesReceived == 1234)
        #expect(transaction.remotePort == 443)
        #expect(transaction.negotiatedTLSProtocolVersion == .TLSv13)
        #expect(transaction.domainResolutionProtocol == .udp)
        #expect(!transaction.isCellular)

        let interval = DateInterval(start: start, duration: 2)
        let metrics = URLSessionTaskMetrics(transactionMetrics: [transaction], taskInterval: interval, redirectCount: 1)
        #expect(metrics.transactionMetrics.count == 1)
        #expect(metrics.transactionMetrics.first === transaction)
        #expect(metrics.taskInterval == interval)
        #expect(metrics.redirectCount == 1)
    }

    @Test(
        "Enumeration raw values match Apple's",
        arguments: [
            (URLSessionTaskMetrics.ResourceFetchType.unknown.rawValue, 0),
            (URLSessionTaskMetrics.ResourceFetchType.networkLoad.rawValue, 1),
            (URLSessionTaskMetrics.ResourceFetchType.serverPush.rawValue, 2),
            (URLSessionTaskMetrics.ResourceFetchType.localCache.rawValue, 3),
            (URLSessionTaskMetrics.DomainResolutionProtocol.https.rawValue, 4),
        ])
    func rawValues(raw: Int, expected: Int) {
        #expect(raw == expected)
    }
}
