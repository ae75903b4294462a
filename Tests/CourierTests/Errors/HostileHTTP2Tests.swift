import Courier
import CourierMockServer
import Foundation
import NIOHTTP2
import Testing

/// An HTTP/2 server that breaks the protocol: NIOHTTP2 detects each violation; the task must end with
/// `networkConnectionLost` or `badServerResponse` — never hang, never crash — and the next request must work on a
/// new connection.
@Suite("Hostile HTTP/2 servers")
struct HostileHTTP2Tests {
    /// A misbehaviour aimed at the request's own stream.
    struct Case: Sendable, CustomTestStringConvertible {
        let testDescription: String
        let misbehaviour: @Sendable (_ streamID: Int) -> HTTP2Misbehaviour
    }

    static let cases: [Case] = [
        Case(testDescription: "DATA on stream 0") { _ in
            .rawFrames(HTTP2RawFrame.frame(type: HTTP2RawFrame.FrameType.data, streamID: 0, payload: [1, 2, 3]))
        },
        Case(testDescription: "a frame longer than the maximum frame size") { stream in
            .rawFrames(
                HTTP2RawFrame.frame(
                    type: HTTP2RawFrame.FrameType.data, streamID: stream, payload: [], declaredLength: 1 << 20))
        },
        Case(testDescription: "a garbage header block") { stream in
            .rawFrames(
                HTTP2RawFrame.frame(
                    type: HTTP2RawFrame.FrameType.headers,
                    flags: HTTP2RawFrame.Flag.endHeaders, streamID: stream, payload: [0xFF, 0xFF, 0xFF, 0xFF, 0x7F]))
        },
        Case(testDescription: "PUSH_PROMISE although push is off") { stream in
            .rawFrames(
                HTTP2RawFrame.pushPromise(
                    streamID: stream, promisedStreamID: 2, fields: [(":method", "GET"), (":path", "/pushed")]))
        },
        Case(testDescription: "SETTINGS with an initial window above 2^31-1") { _ in
            .rawFrames(
                HTTP2RawFrame.settings([(identifier: HTTP2RawFrame.SettingIdentifier.initialWindowSize, value: 1 << 31)]
                ))
        },
        Case(testDescription: "a WINDOW_UPDATE of zero on the connection") { _ in
            .rawFrames(
                HTTP2RawFrame.frame(type: HTTP2RawFrame.FrameType.windowUpdate, streamID: 0, payload: [0, 0, 0, 0]))
        },
        Case(testDescription: "HEADERS without :status") { _ in .headersWithoutStatus },
        Case(testDescription: "RST_STREAM after the head") { _ in .resetAfterHead(errorCode: .internalError) },
    ]

    @Test(arguments: cases)
    func aProtocolViolationFailsTheTaskAndTheNextRequestWorks(_ hostile: Case) async throws {
        let server = MockServer(scheme: .http2, tlsIdentity: SharedTestTLS.serverIdentity)
        try await server.start()
        defer { Task { try? await server.shutdown() } }
        server.route("/hostile") { request in
            var response = MockResponse.ok("should not arrive")
            response.http2Misbehaviour = hostile.misbehaviour(request.streamID ?? 1)
            return response
        }
        server.route("/fine", response: .ok("fine"))
        let session = makeSession { $0.timeoutIntervalForRequest = 30 }
        defer { session.invalidateAndCancel() }
        let start = ContinuousClock.now
        let outcome = await session.runDataTask(server.url("/hostile"))
        #expect(ContinuousClock.now - start < .seconds(20), "the task must fail fast, not wait for its timeout")
        let code = try #require(outcome.urlError?.code)
        #expect([.networkConnectionLost, .badServerResponse].contains(code), "\(code)")
        #expect(outcome.data == nil)
        let next = await session.runDataTask(server.url("/fine"))
        #expect(next.data == Data("fine".utf8), "\(String(describing: next.error))")
    }

    /// A response written as raw frames on `stream`: HEADERS with `fields`, then, with `data`, one DATA frame.
    private static func rawResponse(
        on stream: Int, _ fields: [(name: String, value: String)], data: String? = nil, endStream: Bool = false
    ) -> HTTP2Misbehaviour {
        var bytes = HTTP2RawFrame.headers(streamID: stream, fields: fields)
        if let data {
            bytes += HTTP2RawFrame.frame(
                type: HTTP2RawFrame.FrameType.data, flags: endStream ? HTTP2RawFrame.Flag.endStream : 0,
                streamID: stream, payload: Array(data.utf8))
        }
        return .rawFrames(bytes)
    }

    /// Responses NIOHTTP2 finds malformed (RFC 9113 §8.1.1), aimed at the request's own stream.
    static let malformedResponses: [Case] = [
        Case(testDescription: "a content-length the DATA frames fall short of") { stream in
            HostileHTTP2Tests.rawResponse(
                on: stream, [(name: ":status", value: "200"), (name: "content-length", value: "10")], data: "abc",
                endStream: true)
        },
        Case(testDescription: "DATA beyond the content-length") { stream in
            HostileHTTP2Tests.rawResponse(
                on: stream, [(name: ":status", value: "200"), (name: "content-length", value: "2")], data: "abcdef")
        },
        Case(testDescription: "a connection-specific field") { stream in
            HostileHTTP2Tests.rawResponse(
                on: stream, [(name: ":status", value: "200"), (name: "connection", value: "close")])
        },
        Case(testDescription: "an uppercase field name") { stream in
            HostileHTTP2Tests.rawResponse(
                on: stream, [(name: ":status", value: "200"), (name: "Content-Type", value: "text/plain")])
        },
        Case(testDescription: "HEADERS without :status") { _ in .headersWithoutStatus },
    ]

    /// A malformed response is the server's fault, not the network's: NIOHTTP2 resets the stream (PROTOCOL_ERROR) and
    /// the task fails with `badServerResponse`, as for a malformed HTTP/1.1 response, not `networkConnectionLost`
    /// (which background sessions would retry). The connection is not at fault: the next request runs on it.
    @Test(arguments: malformedResponses)
    func aMalformedResponseIsABadServerResponse(_ malformed: Case) async throws {
        let server = MockServer(scheme: .http2, tlsIdentity: SharedTestTLS.serverIdentity)
        try await server.start()
        defer { Task { try? await server.shutdown() } }
        server.route("/malformed") { request in
            var response = MockResponse.ok("should not arrive")
            response.http2Misbehaviour = malformed.misbehaviour(request.streamID ?? 1)
            return response
        }
        server.route("/fine", response: .ok("fine"))
        let session = makeSession { $0.timeoutIntervalForRequest = 30 }
        defer { session.invalidateAndCancel() }
        let outcome = await session.runDataTask(server.url("/malformed"))
        #expect(outcome.urlError?.code == .badServerResponse, "\(String(describing: outcome.error))")
        let next = await session.runDataTask(server.url("/fine"))
        #expect(next.data == Data("fine".utf8), "\(String(describing: next.error))")
        #expect(server.connectionCount == 1)
    }

    /// A header block of `refs + 1` fields of about 4 KiB each (one literal NIOHTTP2 adds to its dynamic table,
    /// then `refs` one-byte references to it): a few KiB on the wire, `refs` × 4 KiB decoded.
    private static func amplifiedHeaderBlock(refs: Int) -> [UInt8] {
        let value = [UInt8](repeating: UInt8(ascii: "v"), count: 4000)
        // 0x88: `:status: 200` (static table); 0x40: a literal with incremental indexing and a literal name; a
        // 4000-byte string's length as a 7-bit-prefix integer (RFC 7541 §5.1): 127, then 3873 in base 128 (33 with
        // the continuation bit, 30).
        var block: [UInt8] = [0x88, 0x40, 5]
        block += Array("x-big".utf8)
        block += [127, 161, 30]
        block += value
        // 0xBE: the first dynamic table entry (index 62).
        block += [UInt8](repeating: 0xBE, count: refs)
        return block
    }

    /// Abuse NIOHTTP2's guards catch on the connection (it answers with GOAWAY and the connection closes), aimed at
    /// the request's own stream.
    static let connectionAbuse: [Case] = [
        Case(testDescription: "a CONTINUATION flood: HEADERS, then CONTINUATIONs that never end the block") { stream in
            var frames = HTTP2RawFrame.frame(
                type: HTTP2RawFrame.FrameType.headers, streamID: stream,
                payload: HTTP2RawFrame.headerBlock([(":status", "200")]))
            for _ in 0..<64 {
                frames += HTTP2RawFrame.frame(
                    type: HTTP2RawFrame.FrameType.continuation, streamID: stream,
                    payload: HTTP2RawFrame.headerBlock([("x-flood", "a")]))
            }
            return .rawFrames(frames)
        },
        Case(testDescription: "a header list that decodes to more than the 1 MiB announced") { stream in
            .rawFrames(
                HTTP2RawFrame.frame(
                    type: HTTP2RawFrame.FrameType.headers, flags: HTTP2RawFrame.Flag.endHeaders, streamID: stream,
                    payload: HostileHTTP2Tests.amplifiedHeaderBlock(refs: 300)))
        },
        Case(testDescription: "a PING flood") { _ in
            let ping = HTTP2RawFrame.frame(
                type: HTTP2RawFrame.FrameType.ping, streamID: 0, payload: [UInt8](repeating: 0, count: 8))
            return .rawFrames(Array([[UInt8]](repeating: ping, count: 400).joined()))
        },
    ]

    /// A server that abuses the connection (RFC 9113 §5.4.1, §10.5) breaks the protocol: the task fails with
    /// `badServerResponse`, as for a malformed response, and is not sent again. NIOHTTP2 closes the connection's
    /// streams without an error, as when the network drops it, so the task once failed with `networkConnectionLost`
    /// (which a reused connection, and background sessions, retry against the same server).
    @Test(arguments: connectionAbuse)
    func connectionAbuseIsABadServerResponse(_ abuse: Case) async throws {
        let server = MockServer(scheme: .http2, tlsIdentity: SharedTestTLS.serverIdentity)
        try await server.start()
        defer { Task { try? await server.shutdown() } }
        server.route("/abuse") { request in
            var response = MockResponse.ok("should not arrive")
            response.http2Misbehaviour = abuse.misbehaviour(request.streamID ?? 1)
            return response
        }
        server.route("/fine", response: .ok("fine"))
        let session = makeSession { $0.timeoutIntervalForRequest = 30 }
        defer { session.invalidateAndCancel() }
        let start = ContinuousClock.now
        let outcome = await session.runDataTask(server.url("/abuse"))
        #expect(ContinuousClock.now - start < .seconds(20), "the task must fail fast, not wait for its timeout")
        #expect(outcome.urlError?.code == .badServerResponse, "\(String(describing: outcome.error))")
        #expect(outcome.data == nil)
        let next = await session.runDataTask(server.url("/fine"))
        #expect(next.data == Data("fine".utf8), "\(String(describing: next.error))")
        #expect(server.connectionCount == 2, "the request was sent again, or the closed connection reused")
    }

    /// A reset the server sends itself says nothing about the form of its response, whatever its code: the exchange
    /// was cut off, as when the connection is lost.
    @Test func theServersOwnProtocolErrorResetIsALostConnection() async throws {
        let server = MockServer(scheme: .http2, tlsIdentity: SharedTestTLS.serverIdentity)
        try await server.start()
        defer { Task { try? await server.shutdown() } }
        var reset = MockResponse.ok("never sent")
        reset.http2Misbehaviour = .resetAfterHead(errorCode: .protocolError)
        server.route("/reset", response: reset)
        let session = makeSession { $0.timeoutIntervalForRequest = 30 }
        defer { session.invalidateAndCancel() }
        let outcome = await session.runDataTask(server.url("/reset"))
        #expect(outcome.urlError?.code == .networkConnectionLost, "\(String(describing: outcome.error))")
    }

    /// A connection error in the same read as the server's reset of the request's stream (RST_STREAM, then DATA on
    /// stream 0): the task fails with the reset, and the connection, on which NIOHTTP2 has sent GOAWAY and will read
    /// no further, is closed (RFC 9113 §5.4.1), not pooled for the next request.
    @Test func aConnectionErrorRightAfterAStreamResetStillEndsTheConnection() async throws {
        let server = MockServer(scheme: .http2, tlsIdentity: SharedTestTLS.serverIdentity)
        try await server.start()
        defer { Task { try? await server.shutdown() } }
        server.route("/hostile") { request in
            var response = MockResponse.ok("should not arrive")
            let stream = request.streamID ?? 1
            // One write, so one read for the client: RST_STREAM (INTERNAL_ERROR), then DATA on stream 0.
            response.http2Misbehaviour = .rawFrames(
                HTTP2RawFrame.frame(type: HTTP2RawFrame.FrameType.rstStream, streamID: stream, payload: [0, 0, 0, 2])
                    + HTTP2RawFrame.frame(type: HTTP2RawFrame.FrameType.data, streamID: 0, payload: [1, 2, 3]))
            return response
        }
        server.route("/fine", response: .ok("fine"))
        let session = makeSession { $0.timeoutIntervalForRequest = 30 }
        defer { session.invalidateAndCancel() }
        let outcome = await session.runDataTask(server.url("/hostile"))
        #expect(outcome.urlError?.code == .networkConnectionLost, "\(String(describing: outcome.error))")
        let next = await session.runDataTask(server.url("/fine"))
        #expect(next.data == Data("fine".utf8), "\(String(describing: next.error))")
        #expect(server.connectionCount == 2, "the connection NIOHTTP2 sent GOAWAY on served another request")
    }
}
