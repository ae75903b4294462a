import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// One connected Unix-domain socket carrying JSON messages in frames: a 4-byte big-endian length, then the bytes.
///
/// Reads block the calling thread (each side reads on a thread of its own); sends go out in order from a serial
/// queue, so a sender never waits for the peer. A frame longer than ``maximumFrameLength`` or that does not decode
/// ends the connection: the peer is broken or hostile.
package final class FrameChannel: Sendable {
    /// The longest frame accepted (a snapshot of 1,000 tasks fits many times over).
    package static let maximumFrameLength = 16 << 20

    private let descriptor: Int32
    private let writes: DispatchQueue
    private let closed = NIOLockedValueBox(false)

    /// Takes ownership of `descriptor` (a connected stream socket).
    package init(descriptor: Int32, label: String) {
        self.descriptor = descriptor
        self.writes = DispatchQueue(label: "courier.background.\(label).writes")
        // A peer that stops reading must not stall the writer forever: a send that cannot proceed for 30 s fails.
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit {
        close(descriptor)
    }

    /// Makes a blocking ``receive(_:)`` give up after `seconds` (0: wait for ever): for a request that expects one
    /// answer, so that a daemon that accepted but never answers cannot hold its caller for ever.
    package func setReceiveTimeout(seconds: Int) {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Queues `message`; a failed send closes the channel (the reader then sees the end). `false` when the message
    /// cannot be framed (it does not encode, or is longer than the peer accepts): nothing is sent.
    @discardableResult
    package func send<Message: Encodable & Sendable>(_ message: Message) -> Bool {
        guard let frame = try? Self.frame(message) else { return false }
        writes.async { [self] in
            if !writeAll(frame) { shutDown() }
        }
        return true
    }

    /// Sends `message` and returns once it was written (or failed): for a process about to exit.
    package func sendNow<Message: Encodable & Sendable>(_ message: Message) -> Bool {
        guard let frame = try? Self.frame(message) else { return false }
        return writes.sync { writeAll(frame) }
    }

    /// The next message, or `nil` at the end of the connection or on a broken frame. Blocks.
    package func receive<Message: Decodable>(_ type: Message.Type) -> Message? {
        guard let header = readExactly(4) else { return nil }
        let length = header.reduce(0) { $0 << 8 | Int($1) }
        guard length <= Self.maximumFrameLength, let body = readExactly(length) else {
            shutDown()
            return nil
        }
        guard let message = try? JSONDecoder().decode(Message.self, from: body) else {
            shutDown()
            return nil
        }
        return message
    }

    /// Ends the connection once every message queued before has been written.
    package func finish() {
        writes.async { [self] in shutDown() }
    }

    /// Ends the connection in both directions at once; a blocked `receive` returns `nil`.
    package func shutDown() {
        let first = closed.withLockedValue { closed in
            defer { closed = true }
            return !closed
        }
        if first { Glibc.shutdown(descriptor, Int32(SHUT_RDWR)) }
    }

    /// The user at the other end (see ``UnixSocket/peerUserID(of:)``).
    package var peerUserID: uid_t? { UnixSocket.peerUserID(of: descriptor) }

    /// A message longer than a frame may be.
    package struct FrameTooLong: Error {
        package var length: Int
    }

    /// `message` as a frame; throws ``FrameTooLong`` rather than make one the peer would refuse (and end the
    /// connection for).
    package static func frame<Message: Encodable>(_ message: Message) throws -> Data {
        let body = try JSONEncoder().encode(message)
        guard body.count <= maximumFrameLength else { throw FrameTooLong(length: body.count) }
        var frame = Data(capacity: body.count + 4)
        let length = UInt32(body.count)
        frame.append(contentsOf: [
            UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF),
        ])
        frame.append(body)
        return frame
    }

    private func writeAll(_ data: Data) -> Bool {
        data.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.send(
                    descriptor, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                if written < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                offset += written
            }
            return true
        }
    }

    private func readExactly(_ count: Int) -> Data? {
        var data = Data(count: count)
        var offset = 0
        let complete = data.withUnsafeMutableBytes { bytes -> Bool in
            while offset < count {
                let received = recv(descriptor, bytes.baseAddress! + offset, count - offset, 0)
                if received < 0 && errno == EINTR { continue }
                if received <= 0 { return false }
                offset += received
            }
            return true
        }
        return complete ? data : nil
    }
}
