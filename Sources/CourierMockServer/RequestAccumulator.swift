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
        let path: String
        let query: String?
        if let mark = target.firstIndex(of: "?") {
            path = String(target[..<mark])
            query = String(target[target.index(after: mark)...])
        } else {
            path = target
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
}
