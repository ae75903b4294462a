import CourierTransport
import NIOCore
import NIOPosix
import Testing

/// The two ways the transport reads a request body's chunk: through a Swift task (`read(maxLength:)`), and as a
/// future on an event loop (`read(maxLength:on:)` of an ``EventLoopBodyReader``, what the HTTP/1 writer uses).
enum BodyReadPath: CaseIterable, Sendable {
    case task
    case eventLoop

    /// Reads one chunk of `reader` this way; on the event-loop way, checks that the chunk comes back on the loop.
    func read(_ reader: any TransportBodyReader, maxLength: Int) async throws -> ByteBuffer? {
        switch self {
        case .task:
            return try await reader.read(maxLength: maxLength)
        case .eventLoop:
            let direct = try #require(reader as? any EventLoopBodyReader)
            let eventLoop = MultiThreadedEventLoopGroup.singleton.next()
            return try await direct.read(maxLength: maxLength, on: eventLoop).map { chunk in
                #expect(eventLoop.inEventLoop)
                return chunk
            }.get()
        }
    }

    /// Reads `reader` to its end this way, `chunk` bytes at a time: each part's size and storage capacity, and the
    /// bytes.
    func readAll(_ reader: any TransportBodyReader, chunk: Int) async throws -> (
        sizes: [Int], capacities: [Int], bytes: [UInt8]
    ) {
        var sizes: [Int] = []
        var capacities: [Int] = []
        var bytes: [UInt8] = []
        while let buffer = try await read(reader, maxLength: chunk) {
            sizes.append(buffer.readableBytes)
            capacities.append(buffer.capacity)
            bytes += buffer.readableBytesView
        }
        return (sizes, capacities, bytes)
    }
}
