import CourierHTTP
import Foundation

/// Looks for a custom `URLProtocol` subclass that claims the request, in Darwin's order: the configuration's
/// `protocolClasses` in order, then the classes registered with `URLProtocol.registerClass(_:)`, most recently
/// registered first. Entries of `protocolClasses` that are not `URLProtocol` subclasses are skipped.
///
/// Courier does not run custom protocols yet (a later release), so a claimed request fails the task with
/// `URLError(.unsupportedURL)` naming the class; it is never loaded behind the protocol's back.
///
/// A class is asked with `canInit(with: task)` (which by default asks `canInit(with: task.currentRequest)`) when
/// the task's current request is the request being prepared. On a redirect hop the engine prepares the new
/// request before making it the current one, so there the class is asked `canInit(with: request)` directly.
///
/// `canInit` is user code; it runs on the thread that prepares the attempt (the caller of `resume()`, the delegate
/// queue after a redirect decision, or an event loop when a redirect is followed without asking a delegate), never
/// under a lock.
struct ProtocolLookupStage: RequestStage {
    func prepare(_ request: inout URLRequest, task: URLSessionTask) throws(TransferError) {
        let configured = (task.session.sessionConfiguration.protocolClasses ?? []).compactMap {
            $0 as? URLProtocol.Type
        }
        let isCurrentRequest = task.currentRequest == request
        for protocolClass in configured + URLProtocol.registeredClasses {
            let claims =
                isCurrentRequest ? protocolClass.canInit(with: task) : protocolClass.canInit(with: request)
            if claims {
                throw .unsupportedURL(
                    "custom URLProtocol subclasses are not run yet (a later Courier release): \(protocolClass)")
            }
        }
    }
}
