import Foundation

#if canImport(Courier)
    import Courier
#elseif canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// AFHTTPSessionManager: a ``SessionManager`` with a base URL, a request serializer, and one method per HTTP verb.
///
/// ```swift
/// // AFNetworking
/// AFHTTPSessionManager *manager = [[AFHTTPSessionManager alloc] initWithBaseURL:url];
/// [manager GET:@"users" parameters:@{@"page": @2} headers:nil progress:nil
///      success:^(NSURLSessionDataTask *task, id responseObject) { … } failure:^(…) { … }];
///
/// // CourierManager
/// let manager = HTTPSessionManager(baseURL: url)
/// manager.GET("users", parameters: ["page": 2], success: { task, responseObject in … }, failure: { task, error in … })
/// let users = try await manager.get("users", parameters: ["page": 2], as: [User].self)
/// ```
open class HTTPSessionManager: SessionManager, @unchecked Sendable {
    /// Called with the task and the serialized response object.
    public typealias Success = @Sendable (URLSessionDataTask, Any?) -> Void
    /// Called with the task (`nil` when the request could not be made) and the error.
    public typealias Failure = @Sendable (URLSessionDataTask?, any Error) -> Void

    /// The URL relative paths resolve against (a trailing `/` is added to a non-empty path, as in AFNetworking).
    public let baseURL: URL?
    private let serializerLock = NSLock()
    private var storedRequestSerializer: any RequestSerialization = HTTPRequestSerializer()

    /// Makes a manager whose relative URL strings resolve against `baseURL`.
    public init(baseURL: URL? = nil, sessionConfiguration: URLSessionConfiguration = .default) {
        if let baseURL, !baseURL.path.isEmpty, !baseURL.absoluteString.hasSuffix("/") {
            self.baseURL = baseURL.appendingPathComponent("")
        } else {
            self.baseURL = baseURL
        }
        super.init(sessionConfiguration: sessionConfiguration)
    }

    /// Makes requests from methods, URLs and parameters (default: ``HTTPRequestSerializer``).
    public var requestSerializer: any RequestSerialization {
        get { serializerLock.withLock { storedRequestSerializer } }
        set { serializerLock.withLock { storedRequestSerializer = newValue } }
    }

    #if canImport(Courier) || canImport(Security)
        /// The ``SessionManager/securityPolicy``, which can pin (``SSLPinningMode/certificate`` or
        /// ``SSLPinningMode/publicKey``) only on a manager whose ``baseURL`` is `https`: as AFHTTPSessionManager
        /// raises an exception there, setting such a policy on a manager without an `https` base URL (or without one
        /// at all) is a programmer error that stops the program.
        public override var securityPolicy: SecurityPolicy {
            get { super.securityPolicy }
            set {
                precondition(
                    newValue.pinningMode == .none || baseURL?.scheme?.lowercased() == "https",
                    "A security policy configured with \(newValue.pinningMode) pinning can only be applied on a "
                        + "manager with a secure base URL (i.e. https)")
                super.securityPolicy = newValue
            }
        }
    #endif

    /// `urlString` resolved against ``baseURL``.
    public func url(for urlString: String) -> URL? {
        URL(string: urlString, relativeTo: baseURL)?.absoluteURL
    }

    // MARK: - Verbs

    /// A resumed `GET`.
    @discardableResult
    public func GET(
        _ urlString: String, parameters: Any? = nil, headers: [String: String]? = nil,
        progress: ProgressHandler? = nil, success: Success?, failure: Failure?
    ) -> URLSessionDataTask? {
        start(
            "GET", urlString, parameters: parameters, headers: headers, downloadProgress: progress, success: success,
            failure: failure)
    }

    /// A resumed `HEAD`; `success` gets the task only.
    @discardableResult
    public func HEAD(
        _ urlString: String, parameters: Any? = nil, headers: [String: String]? = nil,
        success: (@Sendable (URLSessionDataTask) -> Void)?, failure: Failure?
    ) -> URLSessionDataTask? {
        start(
            "HEAD", urlString, parameters: parameters, headers: headers, success: { task, _ in success?(task) },
            failure: failure)
    }

    /// A resumed `POST`.
    @discardableResult
    public func POST(
        _ urlString: String, parameters: Any? = nil, headers: [String: String]? = nil,
        progress: ProgressHandler? = nil, success: Success?, failure: Failure?
    ) -> URLSessionDataTask? {
        start(
            "POST", urlString, parameters: parameters, headers: headers, uploadProgress: progress, success: success,
            failure: failure)
    }

    /// A resumed multipart `POST` (`POST:parameters:headers:constructingBodyWithBlock:progress:success:failure:`):
    /// `parameters` become form fields and `constructingBody` adds the parts (see
    /// ``HTTPRequestSerializer/multipartFormRequest(method:url:parameters:memoryThreshold:constructingBody:)``).
    @discardableResult
    public func POST(
        _ urlString: String, parameters: [String: Any]? = nil, headers: [String: String]? = nil,
        constructingBodyWith constructingBody: (MultipartFormData) throws -> Void, progress: ProgressHandler? = nil,
        success: Success?, failure: Failure?
    ) -> URLSessionDataTask? {
        let request: URLRequest
        do {
            guard let url = url(for: urlString) else { throw URLError(.badURL) }
            // The HTTP part of the request serializer: its fields (Authorization, …), timeout and cache policy.
            let current = requestSerializer
            let serializer =
                (current as? HTTPRequestSerializer) ?? (current as? JSONRequestSerializer)?.http
                ?? (current as? PropertyListRequestSerializer)?.http ?? HTTPRequestSerializer()
            var made = try serializer.multipartFormRequest(
                method: "POST", url: url, parameters: parameters, constructingBody: constructingBody)
            for (name, value) in headers ?? [:] { made.setValue(value, forHTTPHeaderField: name) }
            request = made
        } catch {
            if let failure { (completionQueue ?? .main).async { failure(nil, error) } }
            return nil
        }
        let task = dataTask(for: request, uploadProgress: progress, success: success, failure: failure)
        resume(task)
        return task
    }

    /// A resumed `PUT`.
    @discardableResult
    public func PUT(
        _ urlString: String, parameters: Any? = nil, headers: [String: String]? = nil, success: Success?,
        failure: Failure?
    ) -> URLSessionDataTask? {
        start("PUT", urlString, parameters: parameters, headers: headers, success: success, failure: failure)
    }

    /// A resumed `PATCH`.
    @discardableResult
    public func PATCH(
        _ urlString: String, parameters: Any? = nil, headers: [String: String]? = nil, success: Success?,
        failure: Failure?
    ) -> URLSessionDataTask? {
        start("PATCH", urlString, parameters: parameters, headers: headers, success: success, failure: failure)
    }

    /// A resumed `DELETE`.
    @discardableResult
    public func DELETE(
        _ urlString: String, parameters: Any? = nil, headers: [String: String]? = nil, success: Success?,
        failure: Failure?
    ) -> URLSessionDataTask? {
        start("DELETE", urlString, parameters: parameters, headers: headers, success: success, failure: failure)
    }

    /// A data task for `method` (not resumed), or `nil` after calling `failure` (on the completion queue) when the
    /// request cannot be made: a URL string that does not resolve, parameters the serializer refuses.
    public func dataTask(
        withHTTPMethod method: String, urlString: String, parameters: Any?, headers: [String: String]?,
        uploadProgress: ProgressHandler? = nil, downloadProgress: ProgressHandler? = nil, success: Success?,
        failure: Failure?
    ) -> URLSessionDataTask? {
        let request: URLRequest
        do {
            request = try makeRequest(method, urlString, parameters: parameters, headers: headers)
        } catch {
            if let failure { (completionQueue ?? .main).async { failure(nil, error) } }
            return nil
        }
        return dataTask(
            for: request, uploadProgress: uploadProgress, downloadProgress: downloadProgress, success: success,
            failure: failure)
    }

    private func dataTask(
        for request: URLRequest, uploadProgress: ProgressHandler? = nil, downloadProgress: ProgressHandler? = nil,
        success: Success?, failure: Failure?
    ) -> URLSessionDataTask {
        let box = TaskBox()
        let task = dataTask(with: request, uploadProgress: uploadProgress, downloadProgress: downloadProgress) {
            _, object, error in
            guard let task = box.task else { return }
            if let error {
                failure?(task, error)
            } else {
                success?(task, object)
            }
        }
        box.task = task
        return task
    }

    private func start(
        _ method: String, _ urlString: String, parameters: Any?, headers: [String: String]?,
        uploadProgress: ProgressHandler? = nil, downloadProgress: ProgressHandler? = nil, success: Success?,
        failure: Failure?
    ) -> URLSessionDataTask? {
        let task = dataTask(
            withHTTPMethod: method, urlString: urlString, parameters: parameters, headers: headers,
            uploadProgress: uploadProgress, downloadProgress: downloadProgress, success: success, failure: failure)
        if let task { resume(task) }
        return task
    }

    private func makeRequest(_ method: String, _ urlString: String, parameters: Any?, headers: [String: String]?)
        throws -> URLRequest
    {
        guard let url = url(for: urlString) else { throw URLError(.badURL) }
        var request = try requestSerializer.request(method: method, url: url, parameters: parameters)
        for (name, value) in headers ?? [:] { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    // MARK: - Swift concurrency

    /// Sends `method` to `urlString` and decodes the JSON response as `Value` (validated as
    /// ``HTTPResponseSerializer`` does: 2xx, JSON content types).
    public func request<Value: Decodable & Sendable>(
        _ method: String, _ urlString: String, parameters: Any? = nil, headers: [String: String]? = nil,
        as type: Value.Type, decoder: @escaping @Sendable () -> JSONDecoder = { JSONDecoder() }
    ) async throws -> Value {
        let request = try makeRequest(method, urlString, parameters: parameters, headers: headers)
        let (data, response) = try await session.data(for: request)
        return try DecodableResponseSerializer(Value.self, decoder: decoder).decode(response, data: data)
    }

    /// `GET` decoded as `Value`.
    public func get<Value: Decodable & Sendable>(
        _ urlString: String, parameters: Any? = nil, headers: [String: String]? = nil, as type: Value.Type
    ) async throws -> Value {
        try await request("GET", urlString, parameters: parameters, headers: headers, as: type)
    }

    /// `POST` decoded as `Value`.
    public func post<Value: Decodable & Sendable>(
        _ urlString: String, parameters: Any? = nil, headers: [String: String]? = nil, as type: Value.Type
    ) async throws -> Value {
        try await request("POST", urlString, parameters: parameters, headers: headers, as: type)
    }
}

/// The task a completion belongs to, set right after it is made (the completion cannot run before `resume()`).
private final class TaskBox: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: URLSessionDataTask?
    var task: URLSessionDataTask? {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
