import CourierHTTP
import Foundation

/// One step that prepares a request before it goes to the transport. Stages run in the order
/// ``RequestPipeline/stages`` lists them, on every attempt (also after a redirect).
protocol RequestStage: Sendable {
    /// Adjusts `request` for `task`, or throws to fail the task.
    func prepare(_ request: inout URLRequest, task: URLSessionTask) throws(TransferError)
}

/// The ordered request stages of the engine (OkHttp's interceptor chain is the model). The response side
/// (redirects now; authentication, cookie and cache storage as they land) runs in ``TaskRunner``.
enum RequestPipeline {
    static let stages: [any RequestStage] = [
        ProtocolLookupStage(),
        URLValidationStage(),
        HeaderDefaultsStage(),
        CookieStage(),
    ]

    /// Runs every stage over a copy of `request`.
    static func prepare(_ request: URLRequest, task: URLSessionTask) throws(TransferError) -> URLRequest {
        var prepared = request
        for stage in stages {
            try stage.prepare(&prepared, task: task)
        }
        return prepared
    }
}
