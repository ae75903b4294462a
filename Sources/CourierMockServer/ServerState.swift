import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP2

/// How a ``MockServer`` produces the response for a request that matched a route.
enum RouteAction: Sendable {
    case response(MockResponse)
    case handler(@Sendable (RecordedRequest) -> MockResponse)
}

/// The key of a route: an exact path and an optional method.
struct RouteKey: Hashable, Sendable {
    var path: String
    var method: String?
}

/// The mutable state a ``MockServer`` shares with its connections, guarded by a lock.
final class ServerState: Sendable {
    private struct Storage {
        var routes: [RouteKey: RouteAction] = [:]
        var queue: [MockResponse] = []
        var requests: [RecordedRequest] = []
        var connectionCount = 0
        var openConnections: [Int: any Channel] = [:]
        var isShutDown = false
        var http2StreamCount = 0
        var receivedPingCount = 0
        /// The error codes of the GOAWAYs the next HTTP/2 connections send with their SETTINGS, one each.
        var goAwaysWithSettings: [HTTP2ErrorCode] = []
    }

    private let storage = NIOLockedValueBox(Storage())
    /// The WebSocket routes and what their connections received.
    let webSockets = WebSocketRegistry()

    // MARK: Routes and queue

    func setRoute(_ key: RouteKey, action: RouteAction) {
        storage.withLockedValue { $0.routes[key] = action }
    }

    func enqueue(_ responses: [MockResponse]) {
        storage.withLockedValue { $0.queue.append(contentsOf: responses) }
    }

    /// Picks the response for `request`: a route for its path and method, else (for `HEAD`) a `GET` route,
    /// else a route for its path and any method, else the next queued response, else a 404.
    func response(for request: RecordedRequest) -> MockResponse {
        let action: RouteAction? = storage.withLockedValue { state in
            let method = request.method.uppercased()
            var candidates = [RouteKey(path: request.path, method: method)]
            if method == "HEAD" {
                candidates.append(RouteKey(path: request.path, method: "GET"))
            }
            candidates.append(RouteKey(path: request.path, method: nil))
            for key in candidates {
                if let action = state.routes[key] {
                    return action
                }
            }
            if !state.queue.isEmpty {
                return .response(state.queue.removeFirst())
            }
            return nil
        }
        switch action {
        case .response(let response):
            return response
        case .handler(let handler):
            return handler(request)
        case nil:
            return .ok("No route for \(request.method) \(request.path)\n").with(status: 404)
        }
    }

    // MARK: Requests

    func record(_ request: RecordedRequest) {
        storage.withLockedValue { $0.requests.append(request) }
    }

    var requests: [RecordedRequest] {
        storage.withLockedValue { $0.requests }
    }

    func clearRequests() {
        storage.withLockedValue { $0.requests.removeAll() }
    }

    // MARK: Connections

    /// Registers a new connection and returns its 1-based id, or `nil` once the server is shut down.
    func openConnection(_ channel: any Channel) -> Int? {
        storage.withLockedValue { state in
            guard !state.isShutDown else { return nil }
            state.connectionCount += 1
            state.openConnections[state.connectionCount] = channel
            return state.connectionCount
        }
    }

    func closeConnection(id: Int) {
        _ = storage.withLockedValue { $0.openConnections.removeValue(forKey: id) }
    }

    var connectionCount: Int {
        storage.withLockedValue { $0.connectionCount }
    }

    var openConnectionCount: Int {
        storage.withLockedValue { $0.openConnections.count }
    }

    // MARK: HTTP/2

    /// Counts a stream a client opened on an HTTP/2 connection.
    func recordHTTP2Stream() {
        storage.withLockedValue { $0.http2StreamCount += 1 }
    }

    /// Counts a PING (not a PING acknowledgement) a client sent on an HTTP/2 connection.
    func recordPing() {
        storage.withLockedValue { $0.receivedPingCount += 1 }
    }

    var http2StreamCount: Int {
        storage.withLockedValue { $0.http2StreamCount }
    }

    /// Queues a GOAWAY with `errorCode` for each of the next `count` HTTP/2 connections to send with their SETTINGS.
    func queueGoAwayWithSettings(_ errorCode: HTTP2ErrorCode, count: Int) {
        storage.withLockedValue { $0.goAwaysWithSettings += Array(repeating: errorCode, count: max(0, count)) }
    }

    /// The error code of the GOAWAY a new HTTP/2 connection sends with its SETTINGS, if one is queued.
    func takeGoAwayWithSettings() -> HTTP2ErrorCode? {
        storage.withLockedValue { state in
            state.goAwaysWithSettings.isEmpty ? nil : state.goAwaysWithSettings.removeFirst()
        }
    }

    var receivedPingCount: Int {
        storage.withLockedValue { $0.receivedPingCount }
    }

    /// Marks the server as shut down and returns the connections still open.
    func shutDown() -> [any Channel] {
        storage.withLockedValue { state in
            state.isShutDown = true
            return Array(state.openConnections.values)
        }
    }
}

extension MockResponse {
    /// A copy with another status code.
    func with(status: Int) -> MockResponse {
        var copy = self
        copy.status = status
        return copy
    }
}
