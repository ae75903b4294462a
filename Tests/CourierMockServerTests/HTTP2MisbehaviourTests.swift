import Foundation
import NIOHTTP2
import Testing

@testable import CourierMockServer

@Suite struct HTTP2MisbehaviourTests {
    private static func misbehaving(_ misbehaviour: HTTP2Misbehaviour, body: String = "body") -> MockResponse {
        var response = MockResponse.ok(body)
        response.http2Misbehaviour = misbehaviour
        return response
    }

    @Test func resetStreamIsSeenAsAResetWithThatCode() async throws {
        let server = MockServer(scheme: .http2)
        server.route("/refused", response: Self.misbehaving(.resetStream(errorCode: .refusedStream)))
        server.route("/broken", response: Self.misbehaving(.resetStream(errorCode: .internalError)))
        try await withServer(server) { server in
            try await H2TestConnection.with(server) { connection in
                let refused = try await connection.response(on: try await connection.sendRequest("GET", "/refused"))
                #expect(refused.resetCode == .refusedStream)
                #expect(refused.fields.isEmpty)
                let broken = try await connection.response(on: try await connection.sendRequest("GET", "/broken"))
                #expect(broken.resetCode == .internalError)
            }
            // The requests were recorded all the same.
            #expect(server.requests.map(\.path) == ["/refused", "/broken"])
        }
    }

    @Test func misbehaviourIsIgnoredOverHTTP11() async throws {
        let server = MockServer(scheme: .http2)
        server.route("/refused", response: Self.misbehaving(.resetStream(errorCode: .refusedStream), body: "plain"))
        try await withServer(server) { server in
            let tls = try clientTLSContext(trusting: server)
            try await TestConnection.with(port: server.port, tls: tls) { connection in
                try await connection.sendRequest("GET", "/refused")
                #expect(try await connection.readResponse().text == "plain")
            }
        }
    }

    @Test func resetAfterHeadSendsTheHeadThenResets() async throws {
        var scripted = Self.misbehaving(.resetAfterHead(errorCode: .protocolError), body: "never sent")
        scripted.headers.append(("Connection", "close"))
        let server = MockServer(scheme: .http2)
        server.route("/half", response: scripted)
        try await withServer(server) { server in
            try await H2TestConnection.with(server) { connection in
                let response = try await connection.response(on: try await connection.sendRequest("GET", "/half"))
                #expect(response.status == 200)
                #expect(response.field("content-type") == "text/plain; charset=utf-8")
                #expect(response.field("content-length") == "10")
                #expect(response.field("connection") == nil)
                #expect(response.body.isEmpty)
                #expect(response.resetCode == .protocolError)
            }
        }
    }

    @Test func goAwayNamesTheStreamBeforeThisOneAndClosesTheConnection() async throws {
        let server = MockServer(scheme: .http2)
        server.route("/first", response: .ok("first"))
        server.route("/leave", response: Self.misbehaving(.goAway(errorCode: .enhanceYourCalm)))
        try await withServer(server) { server in
            try await H2TestConnection.with(server) { connection in
                #expect(
                    try await connection.response(on: try await connection.sendRequest("GET", "/first")).text == "first"
                )
                let leaving = try await connection.sendRequest("GET", "/leave")
                #expect(leaving == 3)
                let frame = try await connection.frame { frame in
                    if case .goAway = frame.payload { return true }
                    return false
                }
                guard case .goAway(let lastStreamID, let errorCode, _) = frame.payload else {
                    Issue.record("unexpected frame: \(frame.payload)")
                    return
                }
                #expect(lastStreamID == 1)
                #expect(errorCode == .enhanceYourCalm)
                #expect(try await connection.isClosedByServer())
                // The stream past the last one was never answered.
                #expect(!connection.frames.contains { Int($0.streamID) == leaving })
            }
            #expect(try await eventually { server.openConnectionCount == 0 })
        }
    }

    @Test func goAwayOnTheFirstStreamNamesStreamZero() async throws {
        let server = MockServer(scheme: .http2)
        server.route("/leave", response: Self.misbehaving(.goAway(errorCode: .noError)))
        try await withServer(server) { server in
            try await H2TestConnection.with(server) { connection in
                try await connection.sendRequest("GET", "/leave")
                let frame = try await connection.frame { frame in
                    if case .goAway = frame.payload { return true }
                    return false
                }
                guard case .goAway(let lastStreamID, _, _) = frame.payload else {
                    Issue.record("unexpected frame: \(frame.payload)")
                    return
                }
                #expect(lastStreamID == .rootStream)
            }
        }
    }

    @Test func goAwayWaitsForEarlierStreamsToFinish() async throws {
        let server = MockServer(scheme: .http2)
        server.route("/slow", response: .delayed("slow", by: .milliseconds(300)))
        server.route("/leave", response: Self.misbehaving(.goAway(errorCode: .noError)))
        try await withServer(server) { server in
            try await H2TestConnection.with(server) { connection in
                let slow = try await connection.sendRequest("GET", "/slow")
                try await connection.sendRequest("GET", "/leave")
                _ = try await connection.frame { frame in
                    if case .goAway = frame.payload { return true }
                    return false
                }
                // The earlier stream is still answered after the GOAWAY.
                #expect(try await connection.response(on: slow).text == "slow")
                #expect(try await connection.isClosedByServer())
            }
        }
    }

    @Test func goAwayAfterResponseAnswersThenGoesAwayGracefully() async throws {
        let server = MockServer(scheme: .http2)
        server.route("/last", response: Self.misbehaving(.goAwayAfterResponse, body: "last one"))
        try await withServer(server) { server in
            try await H2TestConnection.with(server) { connection in
                let stream = try await connection.sendRequest("GET", "/last")
                let response = try await connection.response(on: stream)
                #expect(response.text == "last one")
                #expect(response.ended)
                // response(on:) reads no further than the frame that ends the stream.
                let framesThroughResponse = connection.frames.count
                let isGoAway: (HTTP2Frame) -> Bool = { frame in
                    if case .goAway = frame.payload { return true }
                    return false
                }
                let frame = try await connection.frame(where: isGoAway)
                guard case .goAway(let lastStreamID, let errorCode, _) = frame.payload else {
                    Issue.record("unexpected frame: \(frame.payload)")
                    return
                }
                #expect(lastStreamID == HTTP2StreamID(stream))
                #expect(errorCode == .noError)
                // It came after the response's last frame.
                #expect(connection.frames.firstIndex(where: isGoAway) ?? -1 >= framesThroughResponse)
                #expect(try await connection.isClosedByServer())
            }
        }
    }

    @Test func rawFramesReachTheClientUnchanged() async throws {
        // A PING the server's HTTP/2 layer never sent: the client acknowledges it, and then the response follows.
        let ping = HTTP2RawFrame.frame(
            type: HTTP2RawFrame.FrameType.ping,
            streamID: 0,
            payload: [1, 2, 3, 4, 5, 6, 7, 8]
        )
        let server = MockServer(scheme: .http2)
        server.route("/ping", response: Self.misbehaving(.rawFrames(ping, thenRespond: true), body: "after ping"))
        try await withServer(server) { server in
            try await H2TestConnection.with(server) { connection in
                let stream = try await connection.sendRequest("GET", "/ping")
                let frame = try await connection.frame { frame in
                    if case .ping(_, ack: false) = frame.payload { return true }
                    return false
                }
                guard case .ping(let data, _) = frame.payload else {
                    Issue.record("unexpected frame: \(frame.payload)")
                    return
                }
                #expect(data == HTTP2PingData(withTuple: (1, 2, 3, 4, 5, 6, 7, 8)))
                #expect(try await connection.response(on: stream).text == "after ping")
            }
            // The client's acknowledgement is not counted as a PING of its own.
            #expect(server.receivedPingCount == 0)
        }
    }

    @Test func rawFramesAimedAtTheRequestsStreamFromARouteHandler() async throws {
        let server = MockServer(scheme: .http2)
        server.route("/aimed") { request in
            var response = MockResponse.ok("unused")
            let frame = HTTP2RawFrame.headers(
                streamID: request.streamID ?? 0,
                fields: [(name: ":status", value: "418"), (name: "x-raw", value: "yes")],
                endStream: true
            )
            response.http2Misbehaviour = .rawFrames(frame)
            return response
        }
        try await withServer(server) { server in
            try await H2TestConnection.with(server) { connection in
                let response = try await connection.response(on: try await connection.sendRequest("GET", "/aimed"))
                #expect(response.status == 418)
                #expect(response.field("x-raw") == "yes")
                #expect(response.body.isEmpty)
            }
        }
    }

    @Test func aDataFrameOnStreamZeroIsAConnectionErrorForTheClient() async throws {
        let hostile = HTTP2RawFrame.frame(type: HTTP2RawFrame.FrameType.data, streamID: 0, payload: [1, 2, 3])
        let server = MockServer(scheme: .http2)
        server.route("/hostile", response: Self.misbehaving(.rawFrames(hostile)))
        try await withServer(server) { server in
            try await H2TestConnection.with(server) { connection in
                let stream = try await connection.sendRequest("GET", "/hostile")
                do {
                    let response = try await connection.response(on: stream)
                    Issue.record("expected a connection error, got \(response)")
                } catch is NIOHTTP2Errors.UnableToParseFrame {
                    // NIOHTTP2 refused the frame: a connection error.
                } catch {
                    Issue.record("expected NIOHTTP2 to refuse the frame, got \(error)")
                }
            }
        }
    }

    @Test func goAwayWithSettingsComesRightBehindTheFirstSettingsOnTheNextConnectionOnly() async throws {
        let server = MockServer(scheme: .http2)
        server.route("/after", response: .ok("after"))
        server.goAwayWithSettings(onNext: 1, errorCode: .enhanceYourCalm)
        try await withServer(server) { server in
            try await H2TestConnection.with(server) { connection in
                let goAway = try await connection.frame { frame in
                    if case .goAway = frame.payload { return true }
                    return false
                }
                guard case .goAway(let lastStreamID, let errorCode, _) = goAway.payload else {
                    Issue.record("unexpected frame: \(goAway.payload)")
                    return
                }
                #expect(lastStreamID == 0)
                #expect(errorCode == .enhanceYourCalm)
                // Nothing came between the two: they left in one write.
                let first = try #require(connection.frames.first)
                guard case .settings(.settings) = first.payload else {
                    Issue.record("the first frame is \(first), not SETTINGS")
                    return
                }
                #expect(connection.frames.count == 2)
                // The server closes. The test client's own NIOHTTP2 may first refuse the server's SETTINGS ACK, which
                // reaches it after the GOAWAY left it with nothing to do (RFC 9113 lets a server go on processing
                // frames after its GOAWAY); either way the connection ends.
                do {
                    #expect(try await connection.isClosedByServer())
                } catch is NIOHTTP2Errors.IOOnClosedConnection {}
            }
            // The next connection is served as usual.
            try await H2TestConnection.with(server) { connection in
                let stream = try await connection.sendRequest("GET", "/after")
                let response = try await connection.response(on: stream)
                #expect(response.text == "after")
            }
            #expect(server.requests.map(\.path) == ["/after"])
        }
    }

    @Test func headersWithoutStatusCarryNoStatus() async throws {
        let server = MockServer(scheme: .http2)
        server.route("/nostatus", response: Self.misbehaving(.headersWithoutStatus))
        try await withServer(server) { server in
            try await H2TestConnection.with(server) { connection in
                let stream = try await connection.sendRequest("GET", "/nostatus")
                let frame = try await connection.frame { frame in
                    if Int(frame.streamID) == stream, case .headers = frame.payload { return true }
                    return false
                }
                guard case .headers(let headers) = frame.payload else {
                    Issue.record("unexpected frame: \(frame.payload)")
                    return
                }
                #expect(headers.headers.first(name: "content-type") == "text/plain")
                #expect(headers.headers.first(name: ":status") == nil)
                #expect(!headers.endStream)
            }
        }
    }
}
