import NIOConcurrencyHelpers
import NIOCore

/// What a ``MockTCPServer`` records, and its open connections (closed by `shutdown()`).
final class MockTCPState: Sendable {
    private struct Storage {
        var received: [UInt8] = []
        var connectionCount = 0
        var endOfInputCount = 0
        var channels: [ObjectIdentifier: any Channel] = [:]
        var isShutDown = false
    }

    private let storage = NIOLockedValueBox(Storage())

    var received: [UInt8] { storage.withLockedValue { $0.received } }
    var connectionCount: Int { storage.withLockedValue { $0.connectionCount } }
    var endOfInputCount: Int { storage.withLockedValue { $0.endOfInputCount } }

    /// Counts and keeps a new connection; `false` after shutdown.
    func open(_ channel: any Channel) -> Bool {
        storage.withLockedValue { state in
            guard !state.isShutDown else { return false }
            state.connectionCount += 1
            state.channels[ObjectIdentifier(channel)] = channel
            return true
        }
    }

    func closed(_ channel: any Channel) {
        _ = storage.withLockedValue { $0.channels.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    func record(_ bytes: ByteBuffer) {
        storage.withLockedValue { $0.received.append(contentsOf: bytes.readableBytesView) }
    }

    func recordEndOfInput() {
        storage.withLockedValue { $0.endOfInputCount += 1 }
    }

    /// Marks the server shut down and returns the connections to close.
    func shutDown() -> [any Channel] {
        storage.withLockedValue { state in
            state.isShutDown = true
            defer { state.channels = [:] }
            return Array(state.channels.values)
        }
    }
}
