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
}
