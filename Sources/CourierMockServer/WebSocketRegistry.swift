import NIOConcurrencyHelpers

/// The WebSocket routes of a ``MockServer`` and what their connections received, shared with the connections and
/// guarded by a lock.
final class WebSocketRegistry: Sendable {
    private struct Storage {
        var endpoints: [String: MockWebSocketEndpoint] = [:]
        var messages: [(path: String, message: RecordedWebSocketMessage)] = []
    }

    private let storage = NIOLockedValueBox(Storage())

    func setEndpoint(_ endpoint: MockWebSocketEndpoint, path: String) {
        storage.withLockedValue { $0.endpoints[path] = endpoint }
    }

    /// The endpoint registered for exactly `path`, if any.
    func endpoint(path: String) -> MockWebSocketEndpoint? {
        storage.withLockedValue { $0.endpoints[path] }
    }

    func record(_ message: RecordedWebSocketMessage, path: String) {
        storage.withLockedValue { $0.messages.append((path: path, message: message)) }
    }

    /// What connections to `path` received, in the order it arrived.
    func messages(path: String) -> [RecordedWebSocketMessage] {
        storage.withLockedValue { storage in
            storage.messages.filter { $0.path == path }.map(\.message)
        }
    }

    func clearMessages() {
        storage.withLockedValue { $0.messages.removeAll() }
    }
}
