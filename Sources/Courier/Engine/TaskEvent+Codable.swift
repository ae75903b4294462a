import CourierHTTP
import CourierTransport
import Foundation

// Events and decisions as data that can be written down and sent: the background daemon will journal a task's
// events and hand them to the app over a socket. Requests and responses travel as the plain values below.
// What cannot travel is left out and said so: a request's `httpBodyStream` (a stream is not data), and a
// `URLError`'s user info beyond its failing URL, its description and resume data.

/// A `URLRequest` as plain, codable values.
package struct CodableRequest: Codable, Hashable, Sendable {
    package var url: URL?
    package var method: String?
    /// The header fields in order.
    package var headers: [[String]]
    package var body: Data?
    package var timeoutInterval: TimeInterval
    package var cachePolicy: UInt
    package var httpShouldHandleCookies: Bool
    package var mainDocumentURL: URL?

    package init(_ request: URLRequest) {
        url = request.url
        method = request.httpMethod
        headers = request.headerFields.map { [$0.name, $0.value] }
        body = request.httpBody
        timeoutInterval = request.timeoutInterval
        cachePolicy = request.cachePolicy.rawValue
        httpShouldHandleCookies = request.httpShouldHandleCookies
        mainDocumentURL = request.mainDocumentURL
    }

    package var request: URLRequest {
        var request = URLRequest(url: url ?? URL(fileURLWithPath: "/"), timeoutInterval: timeoutInterval)
        if url == nil { request.url = nil }
        request.httpMethod = method
        for field in headers where field.count == 2 {
            request.addValue(field[1], forHTTPHeaderField: field[0])
        }
        request.httpBody = body
        request.cachePolicy = URLRequest.CachePolicy(rawValue: cachePolicy) ?? .useProtocolCachePolicy
        request.httpShouldHandleCookies = httpShouldHandleCookies
        request.mainDocumentURL = mainDocumentURL
        return request
    }
}

/// A `URLResponse` (or `HTTPURLResponse`) as plain, codable values.
package struct CodableResponse: Codable, Hashable, Sendable {
    package var url: URL?
    /// Set for an HTTP response.
    package var statusCode: Int?
    package var httpVersion: String?
    package var headers: [[String]]
    package var mimeType: String?
    package var expectedContentLength: Int64
    package var textEncodingName: String?

    package init(_ response: URLResponse) {
        url = response.url
        mimeType = response.mimeType
        expectedContentLength = response.expectedContentLength
        textEncodingName = response.textEncodingName
        if let http = response as? HTTPURLResponse {
            statusCode = http.statusCode
            httpVersion = http.httpVersion
            headers = http.headerFields.map { [$0.name, $0.value] }
        } else {
            headers = []
        }
    }

    package var response: URLResponse {
        let target = url ?? URL(fileURLWithPath: "/")
        if let statusCode {
            let pairs = headers.compactMap { $0.count == 2 ? ($0[0], $0[1]) : nil }
            return HTTPURLResponse(
                url: target, statusCode: statusCode, httpVersion: httpVersion, headerFieldPairs: pairs)
        }
        return URLResponse(
            url: target,
            mimeType: mimeType,
            expectedContentLength: Int(expectedContentLength),
            textEncodingName: textEncodingName
        )
    }
}

extension TaskResult: Codable {
    private enum CodingKeys: String, CodingKey {
        case errorCode, failingURL, errorDescription, file, resumeData
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        file = try container.decodeIfPresent(URL.self, forKey: .file)
        resumeData = try container.decodeIfPresent(Data.self, forKey: .resumeData)
        if let code = try container.decodeIfPresent(Int.self, forKey: .errorCode) {
            var userInfo: [String: Any] = [:]
            if let url = try container.decodeIfPresent(URL.self, forKey: .failingURL) {
                userInfo[NSURLErrorFailingURLErrorKey] = url
            }
            if let description = try container.decodeIfPresent(String.self, forKey: .errorDescription) {
                userInfo[NSLocalizedDescriptionKey] = description
            }
            if let resumeData { userInfo[NSURLSessionDownloadTaskResumeData] = resumeData }
            error = URLError(URLError.Code(rawValue: code) ?? .unknown, userInfo: userInfo)
        } else {
            error = nil
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(file, forKey: .file)
        try container.encodeIfPresent(resumeData, forKey: .resumeData)
        if let error {
            try container.encode(error.code.rawValue, forKey: .errorCode)
            try container.encodeIfPresent(error.userInfo[NSURLErrorFailingURLErrorKey] as? URL, forKey: .failingURL)
            try container.encodeIfPresent(
                error.userInfo[NSLocalizedDescriptionKey] as? String, forKey: .errorDescription)
        }
    }
}

extension TaskDecision: Codable {
    private enum CodingKeys: String, CodingKey {
        case kind, request, response, challenge, cached
    }

    private enum Kind: String, Codable {
        case beginDelayedRequest, redirect, response, authenticate, willCacheResponse
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        switch try container.decode(Kind.self, forKey: .kind) {
        case .beginDelayedRequest:
            self = .beginDelayedRequest(try container.decode(CodableRequest.self, forKey: .request).request)
        case .redirect:
            guard
                let response = try container.decode(CodableResponse.self, forKey: .response).response
                    as? HTTPURLResponse
            else {
                throw DecodingError.dataCorruptedError(
                    forKey: .response, in: container, debugDescription: "a redirect needs an HTTP response")
            }
            let request = try container.decode(CodableRequest.self, forKey: .request).request
            self = .redirect(response, newRequest: request)
        case .response:
            self = .response(try container.decode(CodableResponse.self, forKey: .response).response)
        case .authenticate:
            self = .authenticate(try container.decode(AuthenticationQuestion.self, forKey: .challenge))
        case .willCacheResponse:
            self = .willCacheResponse(try container.decode(CodableCachedResponse.self, forKey: .cached).cached)
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .beginDelayedRequest(let request):
            try container.encode(Kind.beginDelayedRequest, forKey: .kind)
            try container.encode(CodableRequest(request), forKey: .request)
        case .redirect(let response, let request):
            try container.encode(Kind.redirect, forKey: .kind)
            try container.encode(CodableResponse(response), forKey: .response)
            try container.encode(CodableRequest(request), forKey: .request)
        case .response(let response):
            try container.encode(Kind.response, forKey: .kind)
            try container.encode(CodableResponse(response), forKey: .response)
        case .authenticate(let question):
            try container.encode(Kind.authenticate, forKey: .kind)
            try container.encode(question, forKey: .challenge)
        case .willCacheResponse(let cached):
            try container.encode(Kind.willCacheResponse, forKey: .kind)
            try container.encode(CodableCachedResponse(cached), forKey: .cached)
        }
    }
}

extension TaskEvent: Codable {
    private enum CodingKeys: String, CodingKey {
        case kind, count, total, expected, request, decision, response, data, timeline, result, metrics
    }

    private enum Kind: String, Codable {
        case attemptStarted, sentBodyData, currentRequest, decide, becameDownload, response, data, receivedToFile
        case downloadResumed, downloadWrote, timeline, completed, informationalResponse, metrics
        case waitingForConnectivity, becameStream
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func int64(_ key: CodingKeys) throws -> Int64 { try container.decode(Int64.self, forKey: key) }
        switch try container.decode(Kind.self, forKey: .kind) {
        case .attemptStarted:
            self = .attemptStarted(expectedToSend: try int64(.expected))
        case .sentBodyData:
            self = .sentBodyData(bytesSent: try int64(.count), totalBytesSent: try int64(.total))
        case .currentRequest:
            self = .currentRequest(try container.decode(CodableRequest.self, forKey: .request).request)
        case .decide:
            self = .decide(try container.decode(TaskDecision.self, forKey: .decision))
        case .becameDownload:
            self = .becameDownload
        case .waitingForConnectivity:
            self = .waitingForConnectivity
        case .becameStream:
            self = .becameStream
        case .response:
            self = .response(try container.decode(CodableResponse.self, forKey: .response).response)
        case .informationalResponse:
            guard
                let response = try container.decode(CodableResponse.self, forKey: .response).response
                    as? HTTPURLResponse
            else {
                throw DecodingError.dataCorruptedError(
                    forKey: .response, in: container, debugDescription: "an informational response is HTTP")
            }
            self = .informationalResponse(response)
        case .data:
            self = .data(try container.decode(Data.self, forKey: .data))
        case .receivedToFile:
            self = .receivedToFile(count: Int(try int64(.count)), total: try int64(.total))
        case .downloadResumed:
            self = .downloadResumed(offset: try int64(.count), expectedTotal: try int64(.expected))
        case .downloadWrote:
            self = .downloadWrote(
                bytes: try int64(.count), totalWritten: try int64(.total), totalExpected: try int64(.expected))
        case .timeline:
            self = .timeline(try container.decode(TransportTimeline.self, forKey: .timeline))
        case .completed:
            self = .completed(try container.decode(TaskResult.self, forKey: .result))
        case .metrics:
            self = .metrics(try container.decode(TaskMetricsRecord.self, forKey: .metrics))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .attemptStarted(let expected):
            try container.encode(Kind.attemptStarted, forKey: .kind)
            try container.encode(expected, forKey: .expected)
        case .sentBodyData(let sent, let total):
            try container.encode(Kind.sentBodyData, forKey: .kind)
            try container.encode(sent, forKey: .count)
            try container.encode(total, forKey: .total)
        case .currentRequest(let request):
            try container.encode(Kind.currentRequest, forKey: .kind)
            try container.encode(CodableRequest(request), forKey: .request)
        case .decide(let decision):
            try container.encode(Kind.decide, forKey: .kind)
            try container.encode(decision, forKey: .decision)
        case .becameDownload:
            try container.encode(Kind.becameDownload, forKey: .kind)
        case .waitingForConnectivity:
            try container.encode(Kind.waitingForConnectivity, forKey: .kind)
        case .becameStream:
            try container.encode(Kind.becameStream, forKey: .kind)
        case .response(let response):
            try container.encode(Kind.response, forKey: .kind)
            try container.encode(CodableResponse(response), forKey: .response)
        case .informationalResponse(let response):
            try container.encode(Kind.informationalResponse, forKey: .kind)
            try container.encode(CodableResponse(response), forKey: .response)
        case .data(let data):
            try container.encode(Kind.data, forKey: .kind)
            try container.encode(data, forKey: .data)
        case .receivedToFile(let count, let total):
            try container.encode(Kind.receivedToFile, forKey: .kind)
            try container.encode(Int64(count), forKey: .count)
            try container.encode(total, forKey: .total)
        case .downloadResumed(let offset, let expected):
            try container.encode(Kind.downloadResumed, forKey: .kind)
            try container.encode(offset, forKey: .count)
            try container.encode(expected, forKey: .expected)
        case .downloadWrote(let bytes, let total, let expected):
            try container.encode(Kind.downloadWrote, forKey: .kind)
            try container.encode(bytes, forKey: .count)
            try container.encode(total, forKey: .total)
            try container.encode(expected, forKey: .expected)
        case .timeline(let timeline):
            try container.encode(Kind.timeline, forKey: .kind)
            try container.encode(timeline, forKey: .timeline)
        case .completed(let result):
            try container.encode(Kind.completed, forKey: .kind)
            try container.encode(result, forKey: .result)
        case .metrics(let record):
            try container.encode(Kind.metrics, forKey: .kind)
            try container.encode(record, forKey: .metrics)
        }
    }
}

extension TaskDecisionAnswer: Codable {
    private enum CodingKeys: String, CodingKey {
        case kind, disposition, request, credential, cached
    }

    private enum Kind: String, Codable {
        case beginDelayedRequest, redirect, response, authenticate, willCacheResponse
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let request = try container.decodeIfPresent(CodableRequest.self, forKey: .request)?.request
        let raw = try container.decodeIfPresent(Int.self, forKey: .disposition) ?? 0
        switch try container.decode(Kind.self, forKey: .kind) {
        case .beginDelayedRequest:
            guard let disposition = URLSession.DelayedRequestDisposition(rawValue: raw) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .disposition, in: container, debugDescription: "unknown disposition \(raw)")
            }
            self = .beginDelayedRequest(disposition, request)
        case .redirect:
            self = .redirect(request)
        case .response:
            guard let disposition = URLSession.ResponseDisposition(rawValue: raw) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .disposition, in: container, debugDescription: "unknown disposition \(raw)")
            }
            self = .response(disposition)
        case .authenticate:
            guard let disposition = URLSession.AuthChallengeDisposition(rawValue: raw) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .disposition, in: container, debugDescription: "unknown disposition \(raw)")
            }
            let credential = try container.decodeIfPresent(AuthenticationQuestion.Credential.self, forKey: .credential)
            self = .authenticate(disposition, credential)
        case .willCacheResponse:
            self = .willCacheResponse(
                try container.decodeIfPresent(CodableCachedResponse.self, forKey: .cached)?.cached)
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .beginDelayedRequest(let disposition, let request):
            try container.encode(Kind.beginDelayedRequest, forKey: .kind)
            try container.encode(disposition.rawValue, forKey: .disposition)
            try container.encodeIfPresent(request.map(CodableRequest.init), forKey: .request)
        case .redirect(let request):
            try container.encode(Kind.redirect, forKey: .kind)
            try container.encodeIfPresent(request.map(CodableRequest.init), forKey: .request)
        case .response(let disposition):
            try container.encode(Kind.response, forKey: .kind)
            try container.encode(disposition.rawValue, forKey: .disposition)
        case .authenticate(let disposition, let credential):
            try container.encode(Kind.authenticate, forKey: .kind)
            try container.encode(disposition.rawValue, forKey: .disposition)
            try container.encodeIfPresent(credential, forKey: .credential)
        case .willCacheResponse(let cached):
            try container.encode(Kind.willCacheResponse, forKey: .kind)
            try container.encodeIfPresent(cached.map(CodableCachedResponse.init), forKey: .cached)
        }
    }
}

/// A cached response as plain values: the response, the body, the storage policy and the cache's metadata (the
/// user info is not encoded).
struct CodableCachedResponse: Codable, Sendable {
    var response: CodableResponse
    var data: Data
    var storagePolicy: UInt
    var metadata: CacheMetadata?

    init(_ cached: CachedURLResponse) {
        response = CodableResponse(cached.response)
        data = cached.data
        storagePolicy = cached.storagePolicy.rawValue
        metadata = cached.metadata
    }

    var cached: CachedURLResponse {
        CachedURLResponse(
            response: response.response, data: data, userInfo: nil,
            storagePolicy: URLCache.StoragePolicy(rawValue: storagePolicy) ?? .allowed, metadata: metadata)
    }
}
