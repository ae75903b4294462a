import CourierHTTP
import NIOConcurrencyHelpers
import NIOSSL

/// Caches one `NIOSSLContext` per ``TLSSettings``: building a context loads the system trust store, which is
/// far too slow to do per connection.
final class TLSContextCache: Sendable {
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
}
