import Crypto
import Foundation
import NIOCore
import NIOHTTP1

/// Collects the parts of one request as they arrive: keeps the first 16 MiB of the body and hashes all of it.
struct RequestAccumulator {
    /// The most body bytes kept in ``RecordedRequest/body``.
    static let maximumKeptBodyBytes = 16 * 1024 * 1024

    let head: HTTPRequestHead
    private var body = Data()
    private var bodyLength = 0
    private var hasher = SHA256()

    init(head: HTTPRequestHead) {
        self.head = head
    }

    mutating func append(_ buffer: ByteBuffer) {
        buffer.withUnsafeReadableBytes { bytes in
            hasher.update(bufferPointer: bytes)
            let room = Self.maximumKeptBodyBytes - body.count
            if room > 0 {
                body.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes.prefix(room)))
            }
        }
        bodyLength += buffer.readableBytes
    }

    func finish(connectionID: Int) -> RecordedRequest {
        let digest = hasher.finalize().map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }
        let target = head.uri
        // Routes match the path of an absolute-form target too (a client that takes the server for its proxy).
        let originForm = Self.originForm(of: target)
        let path: String
        let query: String?
        if let mark = originForm.firstIndex(of: "?") {
            path = String(originForm[..<mark])
            query = String(originForm[originForm.index(after: mark)...])
        } else {
            path = originForm
            query = nil
        }
        return RecordedRequest(
            method: head.method.rawValue,
            target: target,
            path: path,
            query: query,
            version: "HTTP/\(head.version.major).\(head.version.minor)",
            protocolName: head.version.major == 2 ? "h2" : "http/\(head.version.major).\(head.version.minor)",
            headers: head.headers.map { (name: $0.name, value: $0.value) },
            body: body,
            bodyLength: bodyLength,
            bodySHA256: digest.joined(),
            connectionID: connectionID
        )
    }

    /// The path and query of an absolute-form request-target (`http://host:port/a?b` gives `/a?b`, `/` when it has
    /// no path), which a server must accept like the origin form (RFC 9112 §3.2.2); any other target as it is.
    static func originForm(of target: String) -> String {
        guard !target.hasPrefix("/"), let separator = target.range(of: "://") else { return target }
        let scheme = target[..<separator.lowerBound]
        guard let first = scheme.first, first.isASCII, first.isLetter,
            scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) })
        else { return target }
        let afterAuthority = target[separator.upperBound...]
        guard let start = afterAuthority.firstIndex(where: { $0 == "/" || $0 == "?" }) else { return "/" }
        let rest = String(afterAuthority[start...])
        return rest.hasPrefix("?") ? "/" + rest : rest
    }
}
