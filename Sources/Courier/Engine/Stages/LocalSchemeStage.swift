import CourierHTTP
import Foundation

/// Answers `data:` and `file:` URLs without the network, as Darwin's built-in protocols do (after the custom
/// `URLProtocol`s, which may claim them first).
///
/// A short `data:` URL is decoded at once (see ``DataURL``) and answered from memory; a long one, and a `file:` URL,
/// wait: the request side's immediate stages run on the thread that called `resume()`, which must not decode
/// megabytes of base64 first, and opening a file is a blocking call. Both are done on the stage executor, and the
/// file is then streamed (``FileResponseSource``). Both answer with a plain `URLResponse`; any method, and any upload
/// body, only reads.
struct LocalSchemeStage: RequestStage {
    /// The longest `data:` URL decoded on the caller's thread.
    static let immediateDataURLLength = 64 * 1024

    func immediate(_ request: URLRequest, in context: StageContext) throws(TransferError) -> RequestStep? {
        guard let url = request.url else { return .proceed(request) }
        switch url.lowercasedScheme {
        case "data":
            let string = url.absoluteString
            guard string.utf8.count <= Self.immediateDataURLLength else { return nil }
            return .respond(try Self.dataSource(string, url: url))
        case "file":
            return nil
        default:
            return .proceed(request)
        }
    }

    func process(_ request: URLRequest, in context: StageContext) async throws(TransferError) -> RequestStep {
        guard let url = request.url else { return .proceed(request) }
        switch url.lowercasedScheme {
        case "data": return .respond(try Self.dataSource(url.absoluteString, url: url))
        case "file": return .respond(try FileResponseSource.open(url))
        default: return .proceed(request)
        }
    }

    /// The `data:` URL `string` (`url`'s text) decoded, as a source.
    private static func dataSource(_ string: String, url: URL) throws(TransferError) -> InMemoryResponseSource {
        let parsed = try DataURL(parsing: string)
        let response = URLResponse(
            url: url, mimeType: parsed.mimeType, expectedContentLength: parsed.body.count,
            textEncodingName: parsed.textEncodingName)
        return InMemoryResponseSource(response: response, body: parsed.body, origin: .local)
    }
}
