/// Matches the pongs a client receives to the pings it sent (RFC 6455 §5.5.2, §5.5.3). Each ping carries a payload
/// of its own, a counter, which the server's pong must echo. A pong answers the ping whose payload it echoes and every
/// ping sent before that one, since a server that got several pings "MAY elect to send a Pong frame for only the most
/// recently processed Ping frame"; a pong that echoes no outstanding ping — an unsolicited pong, the "unidirectional
/// heartbeat" §5.5.3 allows, or a late one — answers nothing.
///
/// A value: the connection's handler keeps the pings' completions in the same order and completes as many of the
/// oldest as ``pongReceived(_:)`` says.
public struct WebSocketPings: Sendable {
    private var lastNumber: UInt64 = 0
    /// The numbers of the pings sent and not answered yet, oldest first.
    private var outstanding: [UInt64] = []

    public init() {}

    /// The number of pings waiting for their pong.
    public var count: Int { outstanding.count }

    /// A ping goes out: the payload it carries (8 bytes, its number in network byte order).
    public mutating func sent() -> [UInt8] {
        lastNumber &+= 1
        outstanding.append(lastNumber)
        return (0..<8).reversed().map { UInt8(truncatingIfNeeded: lastNumber >> (UInt64($0) * 8)) }
    }

    /// A pong arrived with `payload`: how many of the oldest outstanding pings it answers (0 when it answers none).
    public mutating func pongReceived(_ payload: [UInt8]) -> Int {
        guard payload.count == 8 else { return 0 }
        let number = payload.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        guard let index = outstanding.firstIndex(of: number) else { return 0 }
        outstanding.removeFirst(index + 1)
        return index + 1
    }

    /// The connection ended: no ping is outstanding any more (their completions fail).
    public mutating func removeAll() {
        outstanding.removeAll()
    }
}
