import Foundation

#if canImport(Courier)
    import Courier
#elseif canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Makes requests from a method, a URL and parameters (AFURLRequestSerialization).
public protocol RequestSerialization: Sendable {
    /// The request for `method` and `url` carrying `parameters`.
    func request(method: String, url: URL, parameters: Any?) throws -> URLRequest
}

/// Parameters in the query string for `GET`, `HEAD` and `DELETE`, else a `application/x-www-form-urlencoded` body,
/// encoded with AFNetworking's rules (AFHTTPRequestSerializer): nested dictionaries as `key[sub]=…`, arrays as
/// `key[]=…`, keys sorted, and everything but unreserved characters percent-escaped, `?` and `/` included.
public struct HTTPRequestSerializer: RequestSerialization {
    /// Header fields every request gets (e.g. `Accept-Language`, `User-Agent`, `Authorization`).
    public var httpHeaders: [String: String] = [:]
    /// The methods whose parameters go in the URL.
    public var methodsEncodingParametersInURI: Set<String> = ["GET", "HEAD", "DELETE"]
    /// The requests' timeout; `nil` keeps the session's.
    public var timeoutInterval: TimeInterval?
    /// The requests' cache policy.
    public var cachePolicy: URLRequest.CachePolicy = .useProtocolCachePolicy

    /// A serializer with AFNetworking's default `Accept-Language` (the process's preferred languages, with
    /// decreasing q-values).
    public init() {
        let languages = Locale.preferredLanguages.prefix(6).enumerated().map { index, language in
            index == 0 ? language : "\(language);q=\(String(format: "%.1f", 1 - 0.1 * Double(index)))"
        }
        if !languages.isEmpty { httpHeaders["Accept-Language"] = languages.joined(separator: ", ") }
    }

    /// Sets `Authorization` to HTTP Basic for `username` and `password`.
    public mutating func setAuthorizationHeaderField(username: String, password: String) {
        httpHeaders["Authorization"] = "Basic " + Data("\(username):\(password)".utf8).base64EncodedString()
    }

    /// Removes `Authorization`.
    public mutating func clearAuthorizationHeader() {
        httpHeaders["Authorization"] = nil
    }

    public func request(method: String, url: URL, parameters: Any?) throws -> URLRequest {
        var request = baseRequest(method: method, url: url)
        guard let parameters else { return request }
        let query = Self.queryString(from: parameters)
        if methodsEncodingParametersInURI.contains(method.uppercased()) {
            guard !query.isEmpty, var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else {
                return request
            }
            let existing = components.percentEncodedQuery.map { $0 + "&" } ?? ""
            components.percentEncodedQuery = existing + query
            request.url = components.url
        } else {
            if request.value(forHTTPHeaderField: "Content-Type") == nil {
                request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
            }
            request.httpBody = Data(query.utf8)
        }
        return request
    }

    /// The request with the method, the serializer's fields, timeout and cache policy.
    func baseRequest(method: String, url: URL) -> URLRequest {
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.cachePolicy = cachePolicy
        if let timeoutInterval { request.timeoutInterval = timeoutInterval }
        for (name, value) in httpHeaders where request.value(forHTTPHeaderField: name) == nil {
            request.setValue(value, forHTTPHeaderField: name)
        }
        return request
    }

    /// AFNetworking's `AFQueryStringFromParameters`.
    public static func queryString(from parameters: Any) -> String {
        pairs(key: nil, value: parameters).map { key, value in
            if value is NSNull { return percentEscaped(key) }
            return percentEscaped(key) + "=" + percentEscaped(text(of: value))
        }.joined(separator: "&")
    }

    /// AFNetworking's `AFQueryStringPairsFromKeyAndValue`: the leaves with their field names, the values as given
    /// (a multipart form sends `Data` as its bytes).
    static func pairs(key: String?, value: Any) -> [(String, Any)] {
        if let dictionary = value as? [String: Any] {
            return dictionary.keys.sorted().flatMap { name in
                pairs(key: key.map { "\($0)[\(name)]" } ?? name, value: dictionary[name] ?? NSNull())
            }
        }
        if let array = value as? [Any] {
            return array.flatMap { pairs(key: "\(key ?? "")[]", value: $0) }
        }
        if let set = value as? Set<AnyHashable> {
            return set.map { ($0, "\($0)") }.sorted { $0.1 < $1.1 }.flatMap { pairs(key: key, value: $0.0) }
        }
        guard let key else { return [] }
        return [(key, value)]
    }

    /// A leaf value as text (`NSNumber`'s description for booleans: `1` and `0`).
    static func text(of value: Any) -> String {
        if let bool = value as? Bool { return bool ? "1" : "0" }
        return "\(value)"
    }

    /// AFNetworking's `AFPercentEscapedStringFromString`: RFC 3986 query characters less the general and sub
    /// delimiters, so `?` and `/` stay as they are and `:#[]@!$&'()*+,;=` are escaped.
    public static func percentEscaped(_ string: String) -> String {
        var allowed = CharacterSet.urlQueryAllowed
        allowed.remove(charactersIn: ":#[]@!$&'()*+,;=")
        return string.addingPercentEncoding(withAllowedCharacters: allowed) ?? string
    }
}

/// Parameters as a JSON body (`application/json`), except for the methods that put them in the URL
/// (AFJSONRequestSerializer).
public struct JSONRequestSerializer: RequestSerialization {
    /// The HTTP part: fields, timeout, cache policy, URL-encoded methods.
    public var http = HTTPRequestSerializer()
    /// Writing options for `JSONSerialization`.
    public var writingOptions: JSONSerialization.WritingOptions = []

    /// A JSON request serializer.
    public init() {}

    public func request(method: String, url: URL, parameters: Any?) throws -> URLRequest {
        guard let parameters, !http.methodsEncodingParametersInURI.contains(method.uppercased()) else {
            return try http.request(method: method, url: url, parameters: parameters)
        }
        var request = http.baseRequest(method: method, url: url)
        guard JSONSerialization.isValidJSONObject(parameters) else {
            throw NSError(
                domain: ResponseSerializationError.domain, code: URLError.cannotDecodeRawData.rawValue,
                userInfo: [NSLocalizedDescriptionKey: "The parameters are not a valid JSON object"])
        }
        if request.value(forHTTPHeaderField: "Content-Type") == nil {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        request.httpBody = try JSONSerialization.data(withJSONObject: parameters, options: writingOptions)
        return request
    }
}

/// Parameters as a property list body (`application/x-plist`), except for the methods that put them in the URL
/// (AFPropertyListRequestSerializer).
public struct PropertyListRequestSerializer: RequestSerialization {
    /// The HTTP part: fields, timeout, cache policy, URL-encoded methods.
    public var http = HTTPRequestSerializer()
    /// The format written (default: XML).
    public var format: PropertyListSerialization.PropertyListFormat = .xml

    /// A property list request serializer.
    public init() {}

    public func request(method: String, url: URL, parameters: Any?) throws -> URLRequest {
        guard let parameters, !http.methodsEncodingParametersInURI.contains(method.uppercased()) else {
            return try http.request(method: method, url: url, parameters: parameters)
        }
        var request = http.baseRequest(method: method, url: url)
        if request.value(forHTTPHeaderField: "Content-Type") == nil {
            request.setValue("application/x-plist", forHTTPHeaderField: "Content-Type")
        }
        request.httpBody = try PropertyListSerialization.data(fromPropertyList: parameters, format: format, options: 0)
        return request
    }
}
