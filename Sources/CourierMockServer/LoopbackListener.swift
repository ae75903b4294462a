import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// The listening socket of a mock proxy on 127.0.0.1 and its lifecycle (idle → starting → running → shut down),
/// shared by ``MockProxy`` and ``MockSOCKSProxy``: `start` twice or after `shutdown` throws, and a `shutdown` that
/// comes while binding closes the new listener.
final class LoopbackListener: Sendable {
    private enum Phase {
        case idle, starting, running, shutDown
    }

    private struct Lifecycle {
        var phase = Phase.idle
        var listener: (any Channel)?
        var port = 0
    }

    private let lifecycle = NIOLockedValueBox(Lifecycle())

    /// The bound port; 0 before ``start(_:)``.
    var port: Int { lifecycle.withLockedValue { $0.port } }

    /// Binds `bootstrap` to 127.0.0.1 on an ephemeral port.
    ///
    /// - Throws: ``MockServerError/alreadyStarted`` when called twice or after ``shutdown()``,
    ///   ``MockServerError/shutDown`` when shut down while binding, or the bind error.
    func start(_ bootstrap: ServerBootstrap) async throws {
        try lifecycle.withLockedValue { lifecycle in
            guard lifecycle.phase == .idle else { throw MockServerError.alreadyStarted }
            lifecycle.phase = .starting
        }
        let listener: any Channel
        do {
            listener = try await bootstrap.bind(host: "127.0.0.1", port: 0).get()
        } catch {
            lifecycle.withLockedValue { lifecycle in
                if lifecycle.phase == .starting { lifecycle.phase = .idle }
            }
            throw error
        }
        let cancelled = lifecycle.withLockedValue { lifecycle in
            guard lifecycle.phase == .starting else { return true }
            lifecycle.phase = .running
            lifecycle.listener = listener
            lifecycle.port = listener.localAddress?.port ?? 0
            return false
        }
        if cancelled {
            try? await listener.close()
            throw MockServerError.shutDown
        }
    }

    /// Stops listening; later starts throw. Idempotent.
    func shutdown() async {
        let listener = lifecycle.withLockedValue { lifecycle in
            lifecycle.phase = .shutDown
            defer { lifecycle.listener = nil }
            return lifecycle.listener
        }
        try? await listener?.close()
    }

    /// Closes the listener without waiting (a proxy's `deinit`).
    func closeNow() {
        lifecycle.withLockedValue { $0.listener }?.close(promise: nil)
    }
}
