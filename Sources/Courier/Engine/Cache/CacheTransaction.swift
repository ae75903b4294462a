import Foundation
import NIOConcurrencyHelpers

/// What one task's HTTP caching carries from its request side to its response side and the body: the stored
/// response being revalidated, the stored response to serve after a `304`, when the network request went out, and
/// the response the body will be recorded for.
final class CacheTransaction: Sendable {
    private struct State {
        var validating: CachedURLResponse?
        var serveNext: CachedURLResponse?
        var requestTime = Date()
        /// The request as the lookup saw it (with the session's default fields, without conditional ones): `Vary`
        /// is recorded against it, as the next lookup will see the same fields.
        var sentRequest: URLRequest?
        var recording: CacheRecording?
    }

    /// The cache the task uses.
    let cache: URLCache
    private let state = NIOLockedValueBox(State())

    init(cache: URLCache) {
        self.cache = cache
    }

    /// `request` goes out to the network now, conditional on `validating` if that is set.
    func sending(_ request: URLRequest, validating: CachedURLResponse?, at time: Date) {
        state.withLockedValue { state in
            state.validating = validating
            state.requestTime = time
            state.sentRequest = request
            state.recording = nil
        }
    }

    /// The stored response a conditional request is revalidating, when the request went out, and the request as
    /// the lookup saw it.
    var attempt: (validating: CachedURLResponse?, requestTime: Date, request: URLRequest?) {
        state.withLockedValue { ($0.validating, $0.requestTime, $0.sentRequest) }
    }

    /// A `304` refreshed `response`: the next attempt serves it.
    func serve(_ response: CachedURLResponse) {
        state.withLockedValue { state in
            state.serveNext = response
            state.validating = nil
        }
    }

    /// The response to serve from the cache instead of the network, once.
    func takeServeNext() -> CachedURLResponse? {
        state.withLockedValue { state in
            defer { state.serveNext = nil }
            return state.serveNext
        }
    }

    /// The body of the accepted response is to be recorded for the cache.
    func record(_ recording: CacheRecording) {
        state.withLockedValue { $0.recording = recording }
    }

    func takeRecording() -> CacheRecording? {
        state.withLockedValue { state in
            defer { state.recording = nil }
            return state.recording
        }
    }
}

/// A response whose body is being collected for the cache, up to a limit past which it is not stored (a large body
/// never passes through the cache).
struct CacheRecording: Sendable {
    let request: URLRequest
    let response: HTTPURLResponse
    let metadata: CacheMetadata
    let limit: Int
    private(set) var body = Data()
    private(set) var overflowed = false

    init(request: URLRequest, response: HTTPURLResponse, metadata: CacheMetadata, limit: Int) {
        self.request = request
        self.response = response
        self.metadata = metadata
        self.limit = limit
    }

    mutating func append(_ part: Data) {
        guard !overflowed else { return }
        guard body.count + part.count <= limit else {
            overflowed = true
            body = Data()
            return
        }
        body.append(part)
    }

    /// The cached response to store, or `nil` when the body outgrew the limit.
    var cachedResponse: CachedURLResponse? {
        guard !overflowed else { return nil }
        return CachedURLResponse(
            response: response, data: body, userInfo: nil, storagePolicy: .allowed, metadata: metadata)
    }
}

/// A ``CacheRecording`` behind a reference, so that an engine (one per task) carries a pointer rather than the
/// recording's room when, as for most tasks, nothing is recorded. Confined to its engine's executor.
final class RecordingBox {
    var recording: CacheRecording

    init(_ recording: CacheRecording) {
        self.recording = recording
    }
}
