import Foundation
import NIOCore
import NIOEmbedded
import Testing

@testable import Courier
@testable import CourierTransport

/// A WebSocket handshake whose engine ended (a `cancel()`, a timeout) while the connection's event loop was handing
/// the switched connection over: the two run on different threads, so the transport can fill the slot after the
/// task looked at it.
@Suite("WebSocket connection switched after the handshake failed")
struct WebSocketLateSwitchTests {
    /// The connection the transport leaves after the task's handshake failed is closed. Before, the task looked at
    /// the empty slot once; what came in after stayed there, open, with nothing reading it, for as long as the
    /// server kept it.
    @Test func aConnectionLeftAfterTheHandshakeFailedIsClosed() throws {
        let session = makeSession()
        defer { session.invalidateAndCancel() }
        let task = session.webSocketTask(with: try #require(URL(string: "ws://127.0.0.1:1/late")))
        task.complete(with: URLError(.timedOut), body: nil)
        #expect(task.state == .completed)

        let channel = EmbeddedChannel()
        let buffer = UpgradeBuffer()
        try channel.pipeline.syncOperations.addHandler(buffer)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        #expect(channel.isActive)
        task.upgrade.slot.deliver(UpgradedConnection(channel: channel, buffer: buffer))
        #expect(!channel.isActive)
        #expect(task.upgrade.slot.take() == nil)
    }
}
