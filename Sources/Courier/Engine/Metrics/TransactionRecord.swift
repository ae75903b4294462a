import CourierTransport
import Foundation

/// One request–response transaction of a task as the engine saw it — the raw material of a
/// `URLSessionTaskTransactionMetrics`: which request went where, the response that came back, and, for the network,
/// the transport's timeline.
struct TransactionRecord: Sendable {
    /// Where the response came from.
    enum Origin: String, Sendable, Codable {
        /// The transport (`resourceFetchType` `.networkLoad`).
        case network
        /// The session's `URLCache` (`.localCache`).
        case cache
        /// A custom `URLProtocol`, a `data:` or a `file:` URL (`.unknown`: Darwin names no fetch type for them).
        case local
    }

    /// The engine's attempt number, to match late events (a drained redirect's timeline) to their transaction.
    var attempt: Int
    var request: URLRequest
    var response: URLResponse?
    var origin: Origin
    /// When the response source started.
    var fetchStart: Date
    /// The network exchange's timeline (network transactions, once the exchange ended).
    var timeline: TransportTimeline?
}

/// What the engine hands over for `didFinishCollecting`: every transaction, in order, and the redirects followed.
struct TaskMetricsRecord: Sendable {
    var transactions: [TransactionRecord]
    var redirectCount: Int
}

extension TransactionRecord: Codable {
    private enum CodingKeys: String, CodingKey {
        case attempt, request, response, origin, fetchStart, timeline
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        attempt = try container.decode(Int.self, forKey: .attempt)
        request = try container.decode(CodableRequest.self, forKey: .request).request
        response = try container.decodeIfPresent(CodableResponse.self, forKey: .response)?.response
        origin = try container.decode(Origin.self, forKey: .origin)
        fetchStart = try container.decode(Date.self, forKey: .fetchStart)
        timeline = try container.decodeIfPresent(TransportTimeline.self, forKey: .timeline)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(attempt, forKey: .attempt)
        try container.encode(CodableRequest(request), forKey: .request)
        try container.encodeIfPresent(response.map(CodableResponse.init), forKey: .response)
        try container.encode(origin, forKey: .origin)
        try container.encode(fetchStart, forKey: .fetchStart)
        try container.encodeIfPresent(timeline, forKey: .timeline)
    }
}

extension TaskMetricsRecord: Codable {}
