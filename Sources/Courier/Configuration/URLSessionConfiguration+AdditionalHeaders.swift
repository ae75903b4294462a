import CourierHTTP
import Foundation

extension URLSessionConfiguration {
    /// ``httpAdditionalHeaders`` as name–value pairs, sorted by lowercased name for a deterministic order.
    ///
    /// Keys must be strings. Values may be strings or any `LosslessStringConvertible` value such as a number;
    /// other entries are ignored.
    package var additionalHeaderPairs: [(String, String)] {
        guard let headers = httpAdditionalHeaders else { return [] }
        let pairs: [(String, String)] = headers.compactMap { key, value in
            guard let name = key.base as? String else { return nil }
            if let text = value as? String {
                return (name, text)
            }
            if let convertible = value as? any LosslessStringConvertible {
                return (name, convertible.description)
            }
            return nil
        }
        return pairs.sorted { HeaderName.canonical($0.0) < HeaderName.canonical($1.0) }
    }

    /// The header fields to send for a request: the request's own, completed with ``httpAdditionalHeaders``
    /// except the reserved names.
    ///
    /// - Parameter request: The request about to be sent.
    package func headerFields(for request: URLRequest) -> HeaderFieldDictionary {
        AdditionalHeaderMerge.merge(additional: additionalHeaderPairs, into: request.headerFields)
    }
}
