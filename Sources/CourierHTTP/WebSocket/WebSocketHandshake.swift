import Crypto
import Foundation

/// The opening handshake of RFC 6455 §4, client side: the key and headers a request carries, and the checks the
/// server's answer must pass before the connection speaks WebSocket frames.
public struct WebSocketHandshake: Sendable, Hashable {
    /// The `Sec-WebSocket-Key`: 16 random bytes, base64.
    public let key: String
    /// The subprotocols offered (`Sec-WebSocket-Protocol`), in order of preference.
    public let offeredProtocols: [String]

    /// The GUID RFC 6455 appends to the key before hashing.
    private static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// A handshake with a fresh random key.
    public init(offeredProtocols: [String]) {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        self.init(key: Data(bytes).base64EncodedString(), offeredProtocols: offeredProtocols)
    }

    /// A handshake with a given key (tests, and RFC 6455's worked example).
    public init(key: String, offeredProtocols: [String]) {
        self.key = key
        self.offeredProtocols = offeredProtocols
    }

    /// The subprotocols a request offers in its `Sec-WebSocket-Protocol` fields (comma-separated lists).
    public static func offeredProtocols(in fieldValues: [String]) -> [String] {
        fieldValues.flatMap(listElements)
    }

    /// The non-empty elements of a comma-separated field value, trimmed (RFC 9110 §5.6.1).
    private static func listElements(_ value: String) -> [String] {
        FieldList.elements(of: Array(value.utf8)).map(FieldList.trim).filter { !$0.isEmpty }
            .map { String(decoding: $0, as: UTF8.self) }
    }

    /// The fields the request adds (the app's own `Sec-WebSocket-Protocol` and other fields stay as they are).
    public var requestHeaders: [(String, String)] {
        [
            ("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Key", key),
            ("Sec-WebSocket-Version", "13"),
        ]
    }

    /// The `Sec-WebSocket-Accept` the server must answer with: base64(SHA-1(key + GUID)).
    public var expectedAccept: String {
        Data(Insecure.SHA1.hash(data: Data((key + Self.guid).utf8))).base64EncodedString()
    }

    /// Checks the server's answer (RFC 6455 §4.1): `101`, `Upgrade: websocket`, `Connection: Upgrade`, the right
    /// `Sec-WebSocket-Accept`, and no subprotocol that was not offered. Returns the subprotocol the server chose
    /// (`""` for none, as Darwin reports it).
    ///
    /// - Parameter header: The response's header field values by name (case-insensitive lookup).
    public func validate(status: Int, header: (String) -> String?) throws(TransferError) -> String {
        guard status == 101 else {
            throw .badServerResponse("the server answered the WebSocket handshake with \(status), not 101")
        }
        guard let upgrade = header("Upgrade"), upgrade.trimmingCharacters(in: .whitespaces).lowercased() == "websocket"
        else {
            throw .badServerResponse("the WebSocket handshake's answer does not upgrade to websocket")
        }
        guard Self.listElements(header("Connection") ?? "").contains(where: { HeaderName.equal($0, "upgrade") }) else {
            throw .badServerResponse("the WebSocket handshake's answer has no Connection: Upgrade")
        }
        guard header("Sec-WebSocket-Accept")?.trimmingCharacters(in: .whitespaces) == expectedAccept else {
            throw .badServerResponse("the WebSocket handshake's Sec-WebSocket-Accept is wrong")
        }
        let chosen = header("Sec-WebSocket-Protocol")?.trimmingCharacters(in: .whitespaces) ?? ""
        if !chosen.isEmpty && !offeredProtocols.contains(chosen) {
            throw .badServerResponse("the server chose the WebSocket subprotocol \(chosen), which was not offered")
        }
        if header("Sec-WebSocket-Extensions") != nil {
            // No extension is offered, so none may be used (§4.1, item 5).
            throw .badServerResponse("the server chose a WebSocket extension, though none was offered")
        }
        return chosen
    }
}
