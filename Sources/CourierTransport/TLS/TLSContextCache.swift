import CourierHTTP
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

/// Caches `NIOSSLContext`s per ``TLSSettings`` for the whole process: building a context loads the system
/// trust store, which is far too slow to do per connection, or per session.
final class TLSContextCache: Sendable {
    /// The process-wide cache every transport uses.
    static let shared = TLSContextCache()

    /// Contexts without a client certificate provider: with the system's roots and NIOSSL's full verification, or,
    /// for connections a ``ServerTrustEvaluator`` verifies (a task delegate's, in a session without one), without
    /// either (see ``TLSSettings/makeClientConfiguration(loadsTrustRoots:)``).
    private let contexts = NIOLockedValueBox<[SharedContextKey: NIOSSLContext]>([:])
    /// Contexts that ask a ``ClientCertificateProvider``: one per provider (a session), settings and endpoint,
    /// since NIOSSL's certificate callback belongs to the context and names neither the connection nor its port.
    /// Entries go when their provider does.
    private let providerContexts = NIOLockedValueBox<[ProviderContextKey: ProviderContext]>([:])

    private struct SharedContextKey: Hashable {
        var settings: TLSSettings
        var loadsTrustRoots: Bool
    }

    private struct ProviderContextKey: Hashable {
        var provider: ObjectIdentifier
        var settings: TLSSettings
        var endpoint: Endpoint
        var loadsTrustRoots: Bool
    }

    private struct ProviderContext {
        weak var provider: (any ClientCertificateProvider)?
        var context: NIOSSLContext
    }

    /// The context for `settings`, built on first use. `loadsTrustRoots` as in
    /// ``TLSSettings/makeClientConfiguration(loadsTrustRoots:)``.
    func context(for settings: TLSSettings, loadsTrustRoots: Bool = true) throws(TransferError) -> NIOSSLContext {
        let key = SharedContextKey(settings: settings, loadsTrustRoots: loadsTrustRoots)
        if let cached = contexts.withLockedValue({ $0[key] }) {
            return cached
        }
        let context: NIOSSLContext
        do {
            context = try NIOSSLContext(
                configuration: settings.makeClientConfiguration(loadsTrustRoots: loadsTrustRoots))
        } catch {
            throw .secureConnectionFailed("cannot set up TLS: \(error)")
        }
        return contexts.withLockedValue { cache in
            if let raced = cache[key] { return raced }
            cache[key] = context
            return context
        }
    }

    /// The context for `settings`: at once when cached, else built on NIO's thread pool, since loading the trust
    /// store is blocking file I/O that must not run on an event loop.
    func context(
        for settings: TLSSettings, loadsTrustRoots: Bool = true, on eventLoop: any EventLoop
    ) -> EventLoopFuture<NIOSSLContext> {
        let key = SharedContextKey(settings: settings, loadsTrustRoots: loadsTrustRoots)
        if let cached = contexts.withLockedValue({ $0[key] }) {
            return eventLoop.makeSucceededFuture(cached)
        }
        return NIOThreadPool.singleton.runIfActive(eventLoop: eventLoop) { [self] in
            try self.context(for: settings, loadsTrustRoots: loadsTrustRoots)
        }
    }

    /// The context for a client connection to `endpoint`: one that asks `clientCertificateProvider` when there is
    /// one, else the shared one for `settings`; either without the system's roots (and NIOSSL's host check) when
    /// `trustEvaluator` verifies the server instead. A failure to build it is a `secureConnectionFailed` ``TransferError``.
    func clientContext(
        for settings: TLSSettings,
        endpoint: Endpoint,
        trustEvaluator: (any ServerTrustEvaluator)?,
        clientCertificateProvider: (any ClientCertificateProvider)?,
        on eventLoop: any EventLoop
    ) -> EventLoopFuture<NIOSSLContext> {
        let context: EventLoopFuture<NIOSSLContext>
        if let clientCertificateProvider {
            context = self.context(
                for: settings, provider: clientCertificateProvider, endpoint: endpoint,
                loadsTrustRoots: trustEvaluator == nil, on: eventLoop)
        } else {
            // With an evaluator, it has the last word on the host too: with the roots' context, NIOSSL's host check
            // ran after it and refused a server a task delegate had trusted (`serverCertificateUntrusted`).
            context = self.context(for: settings, loadsTrustRoots: trustEvaluator == nil, on: eventLoop)
        }
        return context.flatMapErrorThrowing { error in
            throw error as? TransferError ?? .secureConnectionFailed("cannot set up TLS: \(error)")
        }
    }

    /// The context for connections to `endpoint` whose client certificate `provider` chooses, built on NIO's thread
    /// pool on first use.
    ///
    /// - Parameter loadsTrustRoots: `false` when a ``ServerTrustEvaluator`` verifies the server, so the system's
    ///   roots need not be loaded (which keeps a context per session cheap).
    func context(
        for settings: TLSSettings,
        provider: any ClientCertificateProvider,
        endpoint: Endpoint,
        loadsTrustRoots: Bool,
        on eventLoop: any EventLoop
    ) -> EventLoopFuture<NIOSSLContext> {
        let key = ProviderContextKey(
            provider: ObjectIdentifier(provider), settings: settings, endpoint: endpoint,
            loadsTrustRoots: loadsTrustRoots)
        if let cached = providerContexts.withLockedValue({ $0[key] }), cached.provider === provider {
            return eventLoop.makeSucceededFuture(cached.context)
        }
        return NIOThreadPool.singleton.runIfActive(eventLoop: eventLoop) { [self] in
            var configuration: TLSConfiguration
            do {
                configuration = try settings.makeClientConfiguration(loadsTrustRoots: loadsTrustRoots)
            } catch {
                throw TransferError.secureConnectionFailed("cannot set up TLS: \(error)")
            }
            configuration.sslContextCallback = Self.askingCallback(provider, endpoint: endpoint)
            let context: NIOSSLContext
            do {
                context = try NIOSSLContext(configuration: configuration)
            } catch {
                throw TransferError.secureConnectionFailed("cannot set up TLS: \(error)")
            }
            return providerContexts.withLockedValue { cache in
                // A context whose provider is gone can never be asked for again: drop them as new ones come.
                cache = cache.filter { $0.value.provider != nil }
                if let raced = cache[key], raced.provider === provider { return raced.context }
                cache[key] = ProviderContext(provider: provider, context: context)
                return context
            }
        }
    }

    /// NIOSSL calls a client context's callback when the server's handshake asks for a certificate; the provider
    /// answers off the event loop. It is held weakly: the context lives in the cache, the provider with its session.
    private static func askingCallback(
        _ provider: any ClientCertificateProvider, endpoint: Endpoint
    ) -> NIOSSLContextCallback {
        { [weak provider] _, promise in
            guard let provider else {
                promise.succeed(.noChanges)
                return
            }
            Task {
                switch await provider.clientIdentity(host: endpoint.host, port: endpoint.port) {
                case .present(let identity):
                    var override = NIOSSLContextConfigurationOverride()
                    override.certificateChain = identity.certificateChain.map { .certificate($0) }
                    override.privateKey = .privateKey(identity.privateKey)
                    promise.succeed(override)
                case .continueWithout:
                    promise.succeed(.noChanges)
                case .reject(let error):
                    promise.fail(error)
                }
            }
        }
    }
}
