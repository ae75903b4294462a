import NIOCore
import NIOEmbedded
import Testing

@testable import CourierTransport

/// A closed HTTP/1.1 connection is freed with its channel: the callbacks the pool gives its handler each hold the
/// connection, which holds the handler, and every one of them must be let go when the channel closes.
@Suite("HTTP1Connection lifetime")
struct HTTP1ConnectionLifetimeTests {
    @Test func aClosedConnectionBoundToAPoolIsFreed() throws {
        let loop = EmbeddedEventLoop()
        let pool = HTTP1TestPipeline.makePool(group: loop)
        defer { pool.shutdown() }
        weak var released: HTTP1Connection?
        do {
            let channel = EmbeddedChannel(loop: loop)
            let handler = HTTP1TestPipeline.makeHandler()
            try HTTP1TestPipeline.add(to: channel.pipeline.syncOperations, socket: SocketEnd(), client: handler)
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 80)).wait()
            let connection = HTTP1Connection(
                id: 1,
                key: PoolKey(request: try HTTP1TestPipeline.request()),
                channel: channel,
                handler: NIOLoopBound(handler, eventLoop: loop)
            )
            connection.bind(to: pool)
            released = connection
            try channel.close().wait()
            loop.run()
        }
        #expect(released == nil)
    }
}
