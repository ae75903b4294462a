import CourierHTTP
import Foundation

/// Looks for a custom `URLProtocol` subclass that claims the request, in Darwin's order: the configuration's
/// `protocolClasses` in order, then the classes registered with `URLProtocol.registerClass(_:)`, most recently
/// registered first. Entries of `protocolClasses` that are not `URLProtocol` subclasses are skipped.
///
/// The class that claims the request answers it: an instance runs as a ``ProtocolResponseSource`` with the class's
/// `canonicalRequest(for:)` and the cached response the session's `urlCache` holds for it, if any.
///
/// A class is asked with `canInit(with: task)` (which by default asks `canInit(with: task.currentRequest)`) when
/// the task's current request is the request being prepared — also on a redirect hop, since the engine makes the
/// follow-up request current before preparing it; otherwise (a task-less engine) `canInit(with: request)`.
///
/// `canInit` is user code: the stage asks it in ``process(_:in:)``, on a Swift concurrency thread, never on an
/// event loop or under a lock.
struct ProtocolLookupStage: RequestStage {
    /// Without any class to ask, there is nothing to wait for; `canInit` is user code, so asking waits.
    func immediate(_ request: URLRequest, in context: StageContext) throws(TransferError) -> RequestStep? {
        candidates(context).isEmpty ? .proceed(request) : nil
    }

    func process(_ request: URLRequest, in context: StageContext) async throws(TransferError) -> RequestStep {
        let isCurrentRequest = context.currentRequest == request
        for protocolClass in candidates(context) {
            let claims: Bool
            if isCurrentRequest, let task = context.task {
                claims = protocolClass.canInit(with: task)
            } else {
                claims = protocolClass.canInit(with: request)
            }
            if claims {
                let canonical = protocolClass.canonicalRequest(for: request)
                let cached = context.cache?.cache.cachedResponse(for: canonical)
                return .respond(
                    ProtocolResponseSource(
                        protocolClass: protocolClass, request: canonical, task: isCurrentRequest ? context.task : nil,
                        cachedResponse: cached))
            }
        }
        return .proceed(request)
    }

    private func candidates(_ context: StageContext) -> [URLProtocol.Type] {
        let registered = URLProtocol.registeredClasses
        if registered.isEmpty { return context.settings.protocolClasses }
        return context.settings.protocolClasses + registered
    }
}
