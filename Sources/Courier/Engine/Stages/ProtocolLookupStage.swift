import CourierHTTP
import Foundation

/// Looks for a custom `URLProtocol` subclass that claims the request, in Darwin's order: the configuration's
/// `protocolClasses` in order, then, for the shared session only (as on Darwin), the classes registered with
/// `URLProtocol.registerClass(_:)`, most recently registered first. Entries of `protocolClasses` that are not
/// `URLProtocol` subclasses are skipped.
///
/// The class that claims the request answers it: an instance runs as a ``ProtocolResponseSource`` with the class's
/// `canonicalRequest(for:)` and the cached response the session's `urlCache` holds for it, if any.
///
/// A class is asked with `canInit(with: task)` (which by default asks `canInit(with: task.currentRequest)`) when
/// the task's current request is the request being prepared — also on a redirect hop, since the engine makes the
/// follow-up request current before preparing it; otherwise (a task-less engine) `canInit(with: request)`.
///
/// An upload task's body, which its request does not carry, reaches the protocol as its request's `httpBodyStream`,
/// as on Darwin: a stub can check what was uploaded, and a protocol that loads through a session of its own sends it.
/// A data task's `httpBody` reaches it both as `httpBody` and as a body stream (Darwin's stubs read the stream,
/// FoundationNetworking's the data), and a body whose length is known is announced in `Content-Length`, as Darwin
/// does, unless the app set that field.
///
/// `canInit` is user code: the stage asks it in ``process(_:in:)``, on a Swift concurrency thread, never on an
/// event loop or under a lock.
struct ProtocolLookupStage: RequestStage {
    /// Without any class to ask, there is nothing to wait for; `canInit` is user code, so asking waits.
    func immediate(_ request: URLRequest, in context: StageContext) throws(TransferError) -> RequestStep? {
        candidates(context).isEmpty ? .proceed(request) : nil
    }

    func process(_ request: URLRequest, in context: StageContext) async throws(TransferError) -> RequestStep {
        let isCurrentRequest = context.currentRequest == request
        for protocolClass in candidates(context) {
            let claims: Bool
            if isCurrentRequest, let task = context.task {
                claims = protocolClass.canInit(with: task)
            } else {
                claims = protocolClass.canInit(with: request)
            }
            if claims {
                let canonical = protocolClass.canonicalRequest(for: request)
                let cached = context.cache?.cache.cachedResponse(for: canonical)
                let loaded = Self.announcingBodyLength(
                    Self.carryingUploadBody(canonical, in: context), in: context
                ).withBodyAlsoAsStream()
                return .respond(
                    ProtocolResponseSource(
                        protocolClass: protocolClass, request: loaded,
                        task: isCurrentRequest ? context.task : nil, cachedResponse: cached))
            }
        }
        return .proceed(request)
    }

    /// `request` with the upload task's data or file as its body stream (a new stream for each load). Only for the
    /// task's first request: after a redirect the request is the one the redirect made (a protocol's
    /// `wasRedirectedTo:` request, or a 303's `GET`, which has no body). A streamed upload's body comes from the
    /// delegate when a transfer asks for it: its request is left as it is.
    static func carryingUploadBody(_ request: URLRequest, in context: StageContext) -> URLRequest {
        guard context.redirectCount == 0, let upload = context.uploadBody else { return request }
        var carrying = request
        switch upload {
        case .data(let data): carrying.httpBodyStream = InputStream(data: data)
        case .file(let url): carrying.httpBodyStream = InputStream(url: url)
        case .streamed: break
        }
        return carrying
    }

    /// `request` with the `Content-Length` of a body whose length is known — its `httpBody`, or the upload task's
    /// data or file — when the app set none, as Darwin hands it to a protocol: Darwin sets that header for a body of
    /// determinable length (`httpAdditionalHeaders`' documentation), and a stub sees it there (Supabase's request
    /// snapshots, recorded on Darwin through Mocker, carry it; the request it built does not). A body stream's
    /// length is unknown: nothing is added.
    static func announcingBodyLength(_ request: URLRequest, in context: StageContext) -> URLRequest {
        guard request.value(forHTTPHeaderField: "Content-Length") == nil else { return request }
        let length: Int64
        if context.redirectCount == 0, let upload = context.uploadBody {
            // An upload task's body is its data or file, whatever its request carries.
            switch upload {
            case .data(let data): length = Int64(data.count)
            case .file(let url):
                guard let size = try? FileBodySource.length(of: url) else { return request }
                length = size
            case .streamed: return request
            }
        } else if let body = request.httpBody {
            length = Int64(body.count)
        } else {
            return request
        }
        // As the request would go on the wire: an empty body only for a method that defines one.
        guard MethodRules.announcesBody(ofLength: length, method: request.httpMethod ?? "GET") else { return request }
        var announcing = request
        announcing.setValue(String(length), forHTTPHeaderField: "Content-Length")
        return announcing
    }

    private func candidates(_ context: StageContext) -> [URLProtocol.Type] {
        guard context.settings.consultsRegisteredProtocols else { return context.settings.protocolClasses }
        let registered = URLProtocol.registeredClasses
        if registered.isEmpty { return context.settings.protocolClasses }
        return context.settings.protocolClasses + registered
    }
}
