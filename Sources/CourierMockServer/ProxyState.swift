import NIOConcurrencyHelpers
import NIOCore

/// The mutable state a ``MockProxy`` or a ``MockSOCKSProxy`` shares with its connections, guarded by a lock: the
/// recorded requests and every open channel, client side and upstream, so that `shutdown()` can close them all.
final class ProxyState<Request: Sendable>: Sendable {
    private struct Storage {
        var requests: [Request] = []
        var connectionCount = 0
        var clientChannels: [Int: any Channel] = [:]
        var upstreamCount = 0
        var upstreamChannels: [Int: any Channel] = [:]
        var isShutDown = false
    }

    private let storage = NIOLockedValueBox(Storage())

    var requests: [Request] {
        storage.withLockedValue { $0.requests }
    }

    /// The number of client connections accepted so far.
    var connectionCount: Int {
        storage.withLockedValue { $0.connectionCount }
    }

    /// Appends `request` and returns its index, for ``update(at:_:)``.
    @discardableResult
    func record(_ request: Request) -> Int {
        storage.withLockedValue { state in
            state.requests.append(request)
            return state.requests.count - 1
        }
    }

    /// Changes the request recorded at `index` (an index ``record(_:)`` returned).
    func update(at index: Int, _ change: (inout Request) -> Void) {
        storage.withLockedValue { state in
            guard state.requests.indices.contains(index) else { return }
            change(&state.requests[index])
        }
    }

    /// Registers an accepted client connection and returns its 1-based id, or `nil` after shutdown.
    func openClientConnection(_ channel: any Channel) -> Int? {
        storage.withLockedValue { state in
            guard !state.isShutDown else { return nil }
            state.connectionCount += 1
            state.clientChannels[state.connectionCount] = channel
            return state.connectionCount
        }
    }

    func closeClientConnection(id: Int) {
        _ = storage.withLockedValue { $0.clientChannels.removeValue(forKey: id) }
    }

    /// Registers a connection to an origin; `false` after shutdown (the caller then closes it), so that no
    /// upstream connection outlives the proxy.
    func openUpstreamConnection(_ channel: any Channel) -> Bool {
        let id: Int? = storage.withLockedValue { state in
            guard !state.isShutDown else { return nil }
            state.upstreamCount += 1
            state.upstreamChannels[state.upstreamCount] = channel
            return state.upstreamCount
        }
        guard let id else { return false }
        channel.closeFuture.whenComplete { [self] _ in
            _ = storage.withLockedValue { $0.upstreamChannels.removeValue(forKey: id) }
        }
        return true
    }

    /// Marks the proxy shut down and returns every open channel, to be closed by the caller.
    func shutDown() -> [any Channel] {
        storage.withLockedValue { state in
            state.isShutDown = true
            defer {
                state.clientChannels = [:]
                state.upstreamChannels = [:]
            }
            return Array(state.clientChannels.values) + Array(state.upstreamChannels.values)
        }
    }

    /// Marks the proxy shut down and closes every open channel, returning once they are closed.
    func closeAll() async {
        let channels = shutDown()
        for channel in channels { channel.close(promise: nil) }
        for channel in channels { try? await channel.closeFuture.get() }
    }
}

extension ProxyState where Request == ProxiedRequest {
    func setStatus(_ status: Int, at index: Int) {
        update(at: index) { $0.answeredStatus = status }
    }
}
