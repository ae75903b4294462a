import CourierHTTP
import Foundation

/// Adds the session's `HTTPAdditionalHeaders` (the request's own values win; reserved names are ignored) and
/// the defaults Darwin sends: `Accept`, `Accept-Encoding: gzip, deflate` (decoded automatically) and a
/// `User-Agent`.
struct HeaderDefaultsStage: RequestStage {
    static let userAgent = "courier/1.0 (Linux; SwiftNIO)"

    func immediate(_ original: URLRequest, in context: StageContext) throws(TransferError) -> RequestStep? {
        var request = original
        let configuration = context.configuration
        if let additional = configuration.httpAdditionalHeaders, !additional.isEmpty {
            let pairs: [(String, String)] = additional.compactMap { key, value in
                guard let name = key.base as? String else { return nil }
                return (name, String(describing: value))
            }
            let current = HeaderFieldDictionary(request.allHTTPHeaderFields ?? [:])
            let merged = AdditionalHeaderMerge.merge(additional: pairs, into: current)
            request.allHTTPHeaderFields = merged.dictionary
        }
        if request.value(forHTTPHeaderField: "Accept") == nil {
            request.setValue("*/*", forHTTPHeaderField: "Accept")
        }
        if request.value(forHTTPHeaderField: "Accept-Encoding") == nil {
            request.setValue("gzip, deflate", forHTTPHeaderField: "Accept-Encoding")
        }
        if request.value(forHTTPHeaderField: "User-Agent") == nil {
            request.setValue(Self.userAgent, forHTTPHeaderField: "User-Agent")
        }
        return .proceed(request)
    }
}
