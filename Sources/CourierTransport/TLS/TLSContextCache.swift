import CourierHTTP
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

/// Caches one `NIOSSLContext` per ``TLSSettings`` for the whole process: building a context loads the system
/// trust store, which is far too slow to do per connection, or per session.
final class TLSContextCache: Sendable {
    /// The process-wide cache every transport uses.
    static let shared = TLSContextCache()

    private let contexts = NIOLockedValueBox<[TLSSettings: NIOSSLContext]>([:])

    /// The context for `settings`, built on first use.
    func context(for settings: TLSSettings) throws(TransferError) -> NIOSSLContext {
        if let cached = contexts.withLockedValue({ $0[settings] }) {
            return cached
        }
        let context: NIOSSLContext
        do {
            context = try NIOSSLContext(configuration: settings.makeClientConfiguration())
        } catch {
            throw .secureConnectionFailed("cannot set up TLS: \(error)")
        }
        return contexts.withLockedValue { cache in
            if let raced = cache[settings] { return raced }
            cache[settings] = context
            return context
        }
    }

    /// The context for `settings`: at once when cached, else built on NIO's thread pool, since loading the trust
    /// store is blocking file I/O that must not run on an event loop.
    func context(for settings: TLSSettings, on eventLoop: any EventLoop) -> EventLoopFuture<NIOSSLContext> {
        if let cached = contexts.withLockedValue({ $0[settings] }) {
            return eventLoop.makeSucceededFuture(cached)
        }
        return NIOThreadPool.singleton.runIfActive(eventLoop: eventLoop) { [self] in
            try self.context(for: settings)
        }
    }
}
