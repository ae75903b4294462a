import Foundation

#if canImport(Courier)
    import Courier
#elseif canImport(FoundationNetworking)
    import FoundationNetworking
#endif

#if canImport(FoundationXML)
    // XMLParser on Linux (libxml2, which the Swift toolchain needs anyway).
    import FoundationXML
#endif

/// Turns a response and its body into a value (AFURLResponseSerialization): validates, then decodes. A serializer
/// that rejects a response throws an error in ``ResponseSerializationError/domain`` whose user info holds the failing
/// response and body under ``ResponseSerializationError/failingResponseKey`` and
/// ``ResponseSerializationError/failingDataKey``.
public protocol ResponseSerialization: Sendable {
    /// The value for `response` and `data`, or `nil` when there is none (an empty body).
    func responseObject(for response: URLResponse?, data: Data?) throws -> Any?
}

/// The error domain and user info keys of response serialization (AFNetworking's
/// `AFURLResponseSerializationErrorDomain`, `AFNetworkingOperationFailingURLResponseErrorKey` and
/// `AFNetworkingOperationFailingURLResponseDataErrorKey`).
public enum ResponseSerializationError {
    /// The domain of every serialization error.
    public static let domain = "com.courier.error.serialization.response"
    /// The `HTTPURLResponse` that failed validation.
    public static let failingResponseKey = "com.courier.serialization.response.error.response"
    /// The body of the response that failed, as `Data`.
    public static let failingDataKey = "com.courier.serialization.response.error.data"

    static func make(_ code: URLError.Code, _ description: String, response: URLResponse?, data: Data?) -> NSError {
        var userInfo: [String: Any] = [NSLocalizedDescriptionKey: description]
        if let response { userInfo[failingResponseKey] = response }
        if let data { userInfo[failingDataKey] = data }
        return NSError(domain: domain, code: code.rawValue, userInfo: userInfo)
    }
}

/// Validates the status code and the content type (AFHTTPResponseSerializer) and returns the body as `Data`.
public struct HTTPResponseSerializer: ResponseSerialization {
    /// Status codes that pass; default 200–299.
    public var acceptableStatusCodes: IndexSet = IndexSet(integersIn: 200..<300)
    /// MIME types that pass, or `nil` for any.
    public var acceptableContentTypes: Set<String>?

    /// Creates a serializer that accepts 2xx responses of any content type.
    public init() {}

    /// Throws unless `response` has an acceptable status and content type (a response without a body passes any
    /// content type, as in AFNetworking).
    public func validate(_ response: URLResponse?, data: Data?) throws {
        guard let http = response as? HTTPURLResponse else { return }
        if let types = acceptableContentTypes, let data, !data.isEmpty {
            let type = http.mimeType?.lowercased() ?? ""
            guard types.contains(type) else {
                throw ResponseSerializationError.make(
                    .cannotDecodeContentData, "Request failed: unacceptable content-type: \(type)", response: response,
                    data: data)
            }
        }
        guard acceptableStatusCodes.contains(http.statusCode) else {
            throw ResponseSerializationError.make(
                .badServerResponse,
                "Request failed: \(HTTPURLResponse.localizedString(forStatusCode: http.statusCode)) (\(http.statusCode))",
                response: response, data: data)
        }
    }

    public func responseObject(for response: URLResponse?, data: Data?) throws -> Any? {
        try validate(response, data: data)
        return data
    }
}

/// Validates as ``HTTPResponseSerializer`` (content types `application/json`, `text/json`, `text/javascript`) and
/// parses JSON (AFJSONResponseSerializer). An empty body, or a single space, gives `nil`.
public struct JSONResponseSerializer: ResponseSerialization {
    /// The validation.
    public var http: HTTPResponseSerializer
    /// Reading options for `JSONSerialization`.
    public var readingOptions: JSONSerialization.ReadingOptions = []
    /// Whether `NSNull` values are removed from dictionaries, recursively.
    public var removesKeysWithNullValues = false

    /// Creates a serializer for JSON.
    public init() {
        http = HTTPResponseSerializer()
        http.acceptableContentTypes = ["application/json", "text/json", "text/javascript"]
    }

    public func responseObject(for response: URLResponse?, data: Data?) throws -> Any? {
        try http.validate(response, data: data)
        guard let data, !data.isEmpty, data != Data(" ".utf8) else { return nil }
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: data, options: readingOptions.union(.fragmentsAllowed))
        } catch {
            throw ResponseSerializationError.make(
                .cannotParseResponse, "The data couldn't be read because it isn't valid JSON: \(error)",
                response: response, data: data)
        }
        return removesKeysWithNullValues ? Self.removingNulls(object) : object
    }

    static func removingNulls(_ object: Any) -> Any {
        if let array = object as? [Any] {
            return array.map(removingNulls)
        }
        if let dictionary = object as? [String: Any] {
            return dictionary.filter { !($0.value is NSNull) }.mapValues(removingNulls)
        }
        return object
    }
}

/// Validates as ``JSONResponseSerializer`` does and decodes a `Decodable` value (a Swift addition).
public struct DecodableResponseSerializer<Value: Decodable & Sendable>: ResponseSerialization {
    /// The validation.
    public var http: HTTPResponseSerializer
    /// Makes the decoder for each response.
    public var makeDecoder: @Sendable () -> JSONDecoder

    /// Creates a serializer that decodes `Value` from JSON.
    public init(_ type: Value.Type = Value.self, decoder: @escaping @Sendable () -> JSONDecoder = { JSONDecoder() }) {
        http = JSONResponseSerializer().http
        makeDecoder = decoder
    }

    public func responseObject(for response: URLResponse?, data: Data?) throws -> Any? {
        try decode(response, data: data)
    }

    /// The decoded value.
    public func decode(_ response: URLResponse?, data: Data?) throws -> Value {
        try http.validate(response, data: data)
        do {
            return try makeDecoder().decode(Value.self, from: data ?? Data())
        } catch {
            throw ResponseSerializationError.make(
                .cannotParseResponse, "The data couldn't be decoded as \(Value.self): \(error)", response: response,
                data: data)
        }
    }
}

/// Validates as ``HTTPResponseSerializer`` (content types `application/x-plist`) and reads a property list
/// (AFPropertyListResponseSerializer).
public struct PropertyListResponseSerializer: ResponseSerialization {
    /// The validation.
    public var http: HTTPResponseSerializer

    /// A property list serializer.
    public init() {
        http = HTTPResponseSerializer()
        http.acceptableContentTypes = ["application/x-plist"]
    }

    public func responseObject(for response: URLResponse?, data: Data?) throws -> Any? {
        try http.validate(response, data: data)
        guard let data, !data.isEmpty else { return nil }
        do {
            return try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
        } catch {
            throw ResponseSerializationError.make(
                .cannotParseResponse, "The data couldn't be read as a property list: \(error)", response: response,
                data: data)
        }
    }
}

/// Validates as ``HTTPResponseSerializer`` (content types `application/xml`, `text/xml`) and returns an `XMLParser`
/// for the body (AFXMLParserResponseSerializer); the app parses it with its own delegate.
public struct XMLParserResponseSerializer: ResponseSerialization {
    /// The validation.
    public var http: HTTPResponseSerializer

    /// An XML serializer.
    public init() {
        http = HTTPResponseSerializer()
        http.acceptableContentTypes = ["application/xml", "text/xml"]
    }

    public func responseObject(for response: URLResponse?, data: Data?) throws -> Any? {
        try http.validate(response, data: data)
        guard let data, !data.isEmpty else { return nil }
        #if canImport(FoundationXML)
            return FoundationXML.XMLParser(data: data)
        #else
            return XMLParser(data: data)
        #endif
    }
}

/// Tries each serializer in order and returns the first value one of them gives (AFCompoundResponseSerializer);
/// when all fail, the last error.
public struct CompoundResponseSerializer: ResponseSerialization {
    /// The serializers, in order.
    public var serializers: [any ResponseSerialization]

    /// A serializer trying `serializers` in order.
    public init(_ serializers: [any ResponseSerialization]) {
        self.serializers = serializers
    }

    public func responseObject(for response: URLResponse?, data: Data?) throws -> Any? {
        var lastError: (any Error)?
        for serializer in serializers {
            do {
                return try serializer.responseObject(for: response, data: data)
            } catch {
                lastError = error
            }
        }
        if let lastError { throw lastError }
        return nil
    }
}
