import Crypto
import Foundation

/// The server's side of the WebSocket opening handshake (RFC 6455 §4.2): checks an upgrade request for a
/// ``MockWebSocketEndpoint`` and says whether to switch protocols, with which `101` head, or what to answer instead.
struct WebSocketHandshake {
    enum Outcome {
        /// Write `head` (a complete `101` response head) and speak WebSocket from then on.
        case switchProtocols(head: String)
        /// Answer with `response` and close the connection.
        case refuse(MockResponse)
    }

    /// The GUID every `Sec-WebSocket-Accept` is derived with (RFC 6455 §1.3).
    private static let acceptGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    let request: RecordedRequest
    let endpoint: MockWebSocketEndpoint

    /// The `Sec-WebSocket-Accept` value for the key `key`: base64 of the SHA-1 of the key followed by the GUID.
    static func acceptValue(forKey key: String) -> String {
        Data(Insecure.SHA1.hash(data: Data((key + acceptGUID).utf8))).base64EncodedString()
    }

    var outcome: Outcome {
        if case .response(let response) = endpoint.handshake {
            return .refuse(response)
        }
        if let check = endpoint.credentialCheck, !check.accepts(request) {
            return .refuse(check.challenge)
        }
        guard request.method == "GET", request.version == "HTTP/1.1" else {
            return .refuse(Self.badRequest("a WebSocket upgrade is a GET over HTTP/1.1"))
        }
        guard request.headers("Sec-WebSocket-Version").map({ $0.trimmingSpaces() }) == ["13"] else {
            var response = MockResponse.ok("This endpoint speaks Sec-WebSocket-Version 13\n").with(status: 426)
            response.headers.append((name: "Sec-WebSocket-Version", value: "13"))
            return .refuse(response)
        }
        guard tokens("Upgrade").contains("websocket") else {
            return .refuse(Self.badRequest("no Upgrade: websocket"))
        }
        guard tokens("Connection").contains("upgrade") else {
            return .refuse(Self.badRequest("no Connection: Upgrade"))
        }
        let keys = request.headers("Sec-WebSocket-Key").map { $0.trimmingSpaces() }
        guard keys.count == 1, let key = keys.first, Data(base64Encoded: key)?.count == 16 else {
            return .refuse(Self.badRequest("Sec-WebSocket-Key must be one base64-encoded 16-byte value"))
        }
        return .switchProtocols(head: switchingProtocolsHead(key: key))
    }

    private func switchingProtocolsHead(key: String) -> String {
        var upgrade: String? = "websocket"
        var accept = Self.acceptValue(forKey: key)
        var subprotocol = selectedSubprotocol
        switch endpoint.handshake {
        case .missingUpgradeHeader:
            upgrade = nil
        case .badAccept:
            // A well-formed value, derived from another key.
            accept = Self.acceptValue(forKey: "not" + key)
        case .unrequestedSubprotocol(let name):
            subprotocol = name
        case .response, nil:
            break
        }
        var fields: [(name: String, value: String)] = []
        if let upgrade {
            fields.append(("Upgrade", upgrade))
        }
        fields.append(("Connection", "Upgrade"))
        fields.append(("Sec-WebSocket-Accept", accept))
        if let subprotocol {
            fields.append(("Sec-WebSocket-Protocol", subprotocol))
        }
        fields += endpoint.extraResponseHeaders
        var head = "HTTP/1.1 101 Switching Protocols\r\n"
        for field in fields {
            head += "\(field.name): \(field.value)\r\n"
        }
        return head + "\r\n"
    }

    /// The first subprotocol in the client's offer (all its `Sec-WebSocket-Protocol` fields, in order) that the
    /// endpoint speaks. Subprotocol names are compared exactly, as RFC 6455 §11.3.4 registers them.
    var selectedSubprotocol: String? {
        let offered = request.headers("Sec-WebSocket-Protocol").flatMap { $0.split(separator: ",") }
            .map { $0.trimmingSpaces() }
        return offered.first { endpoint.subprotocols.contains($0) }
    }

    /// The comma-separated tokens of every field called `name`, lowercased.
    private func tokens(_ name: String) -> [String] {
        request.headers(name).flatMap { $0.split(separator: ",") }.map { $0.trimmingSpaces().lowercased() }
    }

    private static func badRequest(_ problem: String) -> MockResponse {
        MockResponse.ok("Not a WebSocket upgrade: \(problem)\n").with(status: 400)
    }
}
