import CourierHTTP
import Foundation

/// The app's disposition of the final response (`urlSession(_:dataTask:didReceive:completionHandler:)`), the
/// response side's last stage: a data task with a delegate waits for it; the body is held meanwhile.
struct DispositionStage: ResponseStage {
    /// The app is not asked about responses.
    static func passes(_ response: URLResponse, _ facts: ResponseStageFacts) -> Bool {
        !facts.asksForResponses
    }

    func immediate(_ response: URLResponse, in context: StageContext) throws(TransferError) -> ResponseStep? {
        // A multipart/x-mixed-replace response is not asked about as a whole: the engine asks about each part.
        guard !Self.passes(response, ResponseStageFacts(context)), !MultipartReplaceDelivery.handles(response) else {
            return .proceed(response)
        }
        return nil
    }

    func process(_ response: URLResponse, in context: StageContext) async throws(TransferError) -> ResponseStep {
        switch await context.decide(.response(response)) {
        case .response(.allow):
            return .proceed(response)
        case .response(.becomeDownload):
            return .proceedAsDownload(response)
        case .response(.becomeStream):
            return .proceedAsStream(response)
        default:
            throw .cancelled()
        }
    }
}
