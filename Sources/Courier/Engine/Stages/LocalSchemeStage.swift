import CourierHTTP
import Foundation

/// Answers `data:` and `file:` URLs without the network, as Darwin's built-in protocols do (after the custom
/// `URLProtocol`s, which may claim them first).
///
/// A `data:` URL is decoded at once (see ``DataURL``) and answered from memory; a `file:` URL waits: opening a
/// file is a blocking call, made on the stage executor, and the file is then streamed (``FileResponseSource``).
/// Both answer with a plain `URLResponse`; any method, and any upload body, only reads.
struct LocalSchemeStage: RequestStage {
    func immediate(_ request: URLRequest, in context: StageContext) throws(TransferError) -> RequestStep? {
        guard let url = request.url else { return .proceed(request) }
        switch url.lowercasedScheme {
        case "data":
            let parsed = try DataURL(parsing: url.absoluteString)
            let response = URLResponse(
                url: url, mimeType: parsed.mimeType, expectedContentLength: parsed.body.count,
                textEncodingName: parsed.textEncodingName)
            return .respond(InMemoryResponseSource(response: response, body: parsed.body, origin: .local))
        case "file":
            return nil
        default:
            return .proceed(request)
        }
    }

    func process(_ request: URLRequest, in context: StageContext) async throws(TransferError) -> RequestStep {
        guard let url = request.url, url.lowercasedScheme == "file" else { return .proceed(request) }
        return .respond(try FileResponseSource.open(url))
    }
}
