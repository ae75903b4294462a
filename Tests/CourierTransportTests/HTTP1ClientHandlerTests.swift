import CourierHTTP
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import Testing

@testable import CourierTransport

@Suite("HTTP1ClientHandler: request framing")
struct HTTP1ClientHandlerRequestFramingTests {
    /// `Host` is the first field written: the app's own value (moved to the front, sent once) when it set one.
    @Test func appHostIsMovedToTheFront() throws {
        let harness = try HTTP1Harness()
        let request = try HTTP1TestPipeline.request(
            path: "/a?b=1",
            headers: [("Accept", "*/*"), ("host", "other.test:8080"), ("X-Trace", "1")]
        )
        _ = try harness.start(request, consumer: RecordingConsumer())
        let head = try SentHead(harness.sent())
        #expect(head.requestLine == "GET /a?b=1 HTTP/1.1")
        #expect(head.fields.first?.name == "Host")
        #expect(head.fields.first?.value == "other.test:8080")
        #expect(head.values("Host").count == 1)
        #expect(head.fields.dropFirst().map(\.name) == ["Accept", "X-Trace"])
        try harness.finish()
    }

    /// Without an app `Host`, the first field is the endpoint's authority, with the port when it is not the default.
    @Test func hostComesFromTheEndpoint() throws {
        let harness = try HTTP1Harness()
        let request = try HTTP1TestPipeline.request(
            authority: "example.test:8080",
            headers: [("Accept", "*/*")]
        )
        _ = try harness.start(request, consumer: RecordingConsumer())
        let head = try SentHead(harness.sent())
        #expect(head.fields.map(\.name) == ["Host", "Accept"])
        #expect(head.values("Host") == ["example.test:8080"])
        try harness.finish()
    }

    /// `Content-Length` is the body's length; an app-set `Content-Length` and `Transfer-Encoding` that disagree
    /// with the body are replaced, so exactly the body's bytes follow the head.
    @Test func contentLengthComesFromTheBody() throws {
        let harness = try HTTP1Harness()
        let request = try HTTP1TestPipeline.request(
            "POST",
            headers: [("Content-Length", "3"), ("transfer-encoding", "chunked"), ("Content-Type", "text/plain")],
            body: .bytes(ByteBuffer(string: "hello"))
        )
        _ = try harness.start(request, consumer: RecordingConsumer())
        let head = try SentHead(harness.sent())
        #expect(head.values("Content-Length") == ["5"])
        #expect(head.values("Transfer-Encoding").isEmpty)
        #expect(head.values("Content-Type") == ["text/plain"])
        #expect(head.body == "hello")
        try harness.finish()
    }

    /// An empty GET announces no body at all: neither `Content-Length` nor `Transfer-Encoding`.
    @Test func emptyGetHasNoFraming() throws {
        let harness = try HTTP1Harness()
        _ = try harness.start(HTTP1TestPipeline.request("GET"), consumer: RecordingConsumer())
        let head = try SentHead(harness.sent())
        #expect(head.values("Content-Length").isEmpty)
        #expect(head.values("Transfer-Encoding").isEmpty)
        #expect(head.body.isEmpty)
        try harness.finish()
    }

    /// An empty POST sends `Content-Length: 0` (RFC 9110 §8.6), and no `Transfer-Encoding`.
    @Test func emptyPostSendsContentLengthZero() throws {
        let harness = try HTTP1Harness()
        _ = try harness.start(HTTP1TestPipeline.request("POST"), consumer: RecordingConsumer())
        let head = try SentHead(harness.sent())
        #expect(head.values("Content-Length") == ["0"])
        #expect(head.values("Transfer-Encoding").isEmpty)
        #expect(head.body.isEmpty)
        try harness.finish()
    }
}

@Suite("HTTP1ClientHandler: response framing")
struct HTTP1ClientHandlerResponseFramingTests {
    /// A `Content-Length` body that arrives in three reads is delivered as three parts; the response ends only
    /// with its last byte, and the connection is then given back open.
    @Test func contentLengthBodyArrivesInParts() throws {
        let harness = try HTTP1Harness()
        let consumer = RecordingConsumer()
        _ = try harness.start(HTTP1TestPipeline.request(), consumer: consumer)
        _ = try harness.sent()
        try harness.receive("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhel")
        #expect(consumer.events == [.head(200), .body("hel")])
        try harness.receive("lo wo")
        #expect(!consumer.finished)
        #expect(harness.reusableCount == 0)
        try harness.receive("rld")
        #expect(consumer.events == [.head(200), .body("hel"), .body("lo wo"), .body("rld"), .finished])
        #expect(harness.reusableCount == 1)
        #expect(harness.channel.isActive)
        try harness.finish()
    }

    /// A chunked body is delivered without its chunk framing and ends with the last chunk.
    @Test func chunkedBody() throws {
        let harness = try HTTP1Harness()
        let consumer = RecordingConsumer()
        _ = try harness.start(HTTP1TestPipeline.request(), consumer: consumer)
        try harness.receive("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
        #expect(consumer.body == "hello")
        #expect(!consumer.finished)
        try harness.receive("6\r\n world\r\n0\r\n\r\n")
        #expect(consumer.body == "hello world")
        #expect(consumer.events.last == .finished)
        #expect(consumer.error == nil)
        #expect(harness.reusableCount == 1)
        try harness.finish()
    }

    /// A body with neither `Content-Length` nor chunking is delimited by the connection closing: it ends, without
    /// an error, when the server closes, and the connection is not given back.
    @Test func bodyDelimitedByCloseEndsAtClose() throws {
        let harness = try HTTP1Harness()
        let consumer = RecordingConsumer()
        _ = try harness.start(HTTP1TestPipeline.request(), consumer: consumer)
        try harness.receive("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nabc")
        try harness.receive("def")
        #expect(consumer.events == [.head(200), .body("abc"), .body("def")])
        harness.serverCloses()
        #expect(consumer.events == [.head(200), .body("abc"), .body("def"), .finished])
        #expect(harness.reusableCount == 0)
        #expect(harness.closedCount == 1)
        try harness.finish()
    }

    /// 204 and 304 responses have no body, whatever their fields say: the response ends with its head and the
    /// connection is reusable.
    @Test(arguments: [
        "HTTP/1.1 204 No Content\r\n\r\n",
        "HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\nContent-Length: 5\r\n\r\n",
    ])
    func noContentAndNotModifiedHaveNoBody(response: String) throws {
        let harness = try HTTP1Harness()
        let consumer = RecordingConsumer()
        _ = try harness.start(HTTP1TestPipeline.request(), consumer: consumer)
        try harness.receive(response)
        #expect(consumer.events.count == 2)
        #expect(consumer.heads.map(\.status) == [Int(response.dropFirst(9).prefix(3))])
        #expect(consumer.events.last == .finished)
        #expect(harness.reusableCount == 1)
        #expect(harness.channel.isActive)
        try harness.finish()
    }

    /// The response to HEAD has no body even with a `Content-Length`: it ends with its head.
    @Test func headResponseHasNoBody() throws {
        let harness = try HTTP1Harness()
        let consumer = RecordingConsumer()
        _ = try harness.start(HTTP1TestPipeline.request("HEAD"), consumer: consumer)
        _ = try harness.sent()
        try harness.receive("HTTP/1.1 200 OK\r\nContent-Length: 42\r\n\r\n")
        #expect(consumer.events == [.head(200), .finished])
        #expect(consumer.heads.first?.headers.first { $0.0 == "Content-Length" }?.1 == "42")
        #expect(harness.reusableCount == 1)
        try harness.finish()
    }

    /// Bytes a server sends before the first request are no response. The start of a head was once kept, silently,
    /// to prefix the real response (here the real status line would become the value of `X-Stray`, and its fields
    /// this head's): the connection is closed instead, unused.
    @Test func bytesBeforeTheFirstRequestCloseTheConnection() throws {
        let harness = try HTTP1Harness()
        try harness.receive("HTTP/1.1 200 OK\r\nContent-Length: 4\r\nX-Stray: ")
        #expect(!harness.channel.isActive)
        #expect(harness.closedCount == 1)
        #expect(harness.reusableCount == 0)
        try harness.finish()
    }
}

@Suite("HTTP1ClientHandler: pause")
struct HTTP1ClientHandlerPauseTests {
    /// While the exchange is paused the handler holds the channel's reads back, so bytes the server sent stay
    /// unread, and no request timer runs however long the pause lasts; resuming issues the held read, the waiting
    /// bytes are delivered, and the request timer starts again from the resume.
    @Test func pausedExchangeIssuesNoReadAndRunsNoTimer() throws {
        let harness = try HTTP1Harness()
        let consumer = RecordingConsumer()
        let exchange = try harness.start(HTTP1TestPipeline.request(idleTimeout: .seconds(5)), consumer: consumer)
        _ = try harness.sent()
        harness.channel.read()  // as autoRead does once the channel is active
        #expect(harness.socket.reads == 1)

        // The consumer's buffer fills at the first part: it pauses from inside the event.
        consumer.onBodyPart { exchange.pause() }
        harness.socket.arrive("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n01234")
        #expect(consumer.events == [.head(200), .body("01234")])
        // The socket's next read (autoRead) was held back by the paused handler, and so is any other.
        harness.channel.read()
        #expect(harness.socket.reads == 1)
        harness.socket.arrive("56")
        #expect(harness.socket.unreadBytes == 2)

        harness.loop.advanceTime(by: .seconds(60))
        #expect(consumer.events == [.head(200), .body("01234")])
        #expect(harness.channel.isActive)

        consumer.onBodyPart {}
        exchange.resume()
        #expect(harness.socket.reads >= 2)
        #expect(harness.socket.unreadBytes == 0)
        #expect(consumer.events == [.head(200), .body("01234"), .body("56")])
        // The timer runs again, from the resume on.
        harness.loop.advanceTime(by: .seconds(4))
        #expect(consumer.error == nil)
        harness.loop.advanceTime(by: .seconds(1))
        #expect(consumer.events.last == .failed(.timedOut))
        try harness.finish()
    }
}

@Suite("HTTP1ClientHandler: early close")
struct HTTP1ClientHandlerEarlyCloseTests {
    /// A server that closes in the middle of a `Content-Length` body fails the exchange with
    /// `networkConnectionLost`, after the bytes that did arrive, even on a reused connection (no retry after the
    /// head).
    @Test func closeBeforeTheResponseEndedIsConnectionLost() throws {
        let harness = try HTTP1Harness()
        harness.pool.shutdown()
        let consumer = RecordingConsumer()
        _ = try harness.start(HTTP1TestPipeline.request(), consumer: consumer, isReused: true)
        try harness.receive("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123")
        harness.serverCloses()
        #expect(consumer.events == [.head(200), .body("0123"), .failed(.networkConnectionLost)])
        #expect(harness.closedCount == 1)
        try harness.finish()
    }

    /// A server that closes a reused connection before any response byte (a stale keep-alive connection) gets
    /// the idempotent request retried: the exchange goes back to the pool for a second lease instead of failing
    /// with the lost connection. The pool here is shut down, so that second lease is what fails, with the
    /// pool's own error.
    @Test func closeBeforeAnyByteOnAReusedConnectionIsRetried() throws {
        let harness = try HTTP1Harness()
        harness.pool.shutdown()
        let consumer = RecordingConsumer()
        _ = try harness.start(HTTP1TestPipeline.request(), consumer: consumer, isReused: true)
        harness.serverCloses()
        #expect(consumer.events == [.failed(.cancelled)])
        #expect(consumer.error?.detail == "the session was invalidated")
    }

    /// A request without a body has no body writer: its end goes out with the head. When that write fails on a
    /// reused connection (the socket closes under it, as NIO closes a channel whose write failed), the idempotent
    /// request is retried as for any stale keep-alive connection; on a fresh one it fails as a lost connection.
    @Test(arguments: [true, false])
    func aFailedWriteOfABodilessRequest(isReused: Bool) throws {
        let harness = try HTTP1Harness()
        harness.pool.shutdown()
        try harness.channel.pipeline.syncOperations.addHandler(FailingWrites(), position: .first)
        let consumer = RecordingConsumer()
        _ = try harness.start(HTTP1TestPipeline.request(), consumer: consumer, isReused: isReused)
        if isReused {
            #expect(consumer.events == [.failed(.cancelled)])
            #expect(consumer.error?.detail == "the session was invalidated")
        } else {
            #expect(consumer.events == [.failed(.networkConnectionLost)])
        }
    }

    /// The same close is reported as `networkConnectionLost`, without a retry, on a fresh connection or for a
    /// request that is not idempotent.
    @Test(arguments: [("GET", false), ("POST", true)])
    func closeBeforeAnyByteIsNotRetriedOtherwise(method: String, isReused: Bool) throws {
        let harness = try HTTP1Harness()
        harness.pool.shutdown()
        let consumer = RecordingConsumer()
        _ = try harness.start(HTTP1TestPipeline.request(method), consumer: consumer, isReused: isReused)
        harness.serverCloses()
        #expect(consumer.events == [.failed(.networkConnectionLost)])
    }
}

@Suite("HTTP1ClientHandler: informational responses")
struct HTTP1ClientHandlerInformationalTests {
    /// `100 Continue` and `103 Early Hints` before the final response are never delivered as the response: the
    /// consumer sees one head, the final one, and its body, whether they come in one read or in several; the 103
    /// (not the 100, the transport's own business) comes first as an informational head with its fields.
    @Test(arguments: [false, true])
    func interimResponsesAreNotDelivered(oneRead: Bool) throws {
        let harness = try HTTP1Harness()
        let consumer = RecordingConsumer()
        _ = try harness.start(HTTP1TestPipeline.request(), consumer: consumer)
        let parts = [
            "HTTP/1.1 100 Continue\r\n\r\n",
            "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
        ]
        if oneRead {
            try harness.receive(parts.joined())
        } else {
            try harness.receive(parts[0])
            try harness.receive(parts[1])
            #expect(consumer.events == [.informational(103)])
            try harness.receive(parts[2])
        }
        #expect(consumer.events == [.informational(103), .head(200), .body("ok"), .finished])
        #expect(consumer.heads.first?.headers.contains { $0.0 == "Link" } == false)
        #expect(
            consumer.informationalHeads.first?.headers.contains { $0 == ("Link", "</style.css>; rel=preload") } == true)
        #expect(harness.reusableCount == 1)
        try harness.finish()
    }
}

extension HTTP1ClientHandlerInformationalTests {
    /// Informational heads without end (each restarts the request timeout, so a server sending `102 Processing` for
    /// ever kept the task alive until its resource timeout): past ``InformationalResponseLimit/maximumCount`` the
    /// exchange fails with `badServerResponse` and the connection closes. Up to the limit they are delivered.
    @Test func informationalHeadsPastTheLimitFailTheExchange() throws {
        let harness = try HTTP1Harness()
        let consumer = RecordingConsumer()
        _ = try harness.start(HTTP1TestPipeline.request(), consumer: consumer)
        let limit = InformationalResponseLimit.maximumCount
        for _ in 0..<limit {
            try harness.receive("HTTP/1.1 102 Processing\r\n\r\n")
        }
        #expect(consumer.events == Array(repeating: RecordingConsumer.Event.informational(102), count: limit))
        #expect(harness.channel.isActive)
        try harness.receive("HTTP/1.1 102 Processing\r\n\r\n")
        #expect(consumer.events.last == .failed(.badServerResponse))
        #expect(consumer.events.count == limit + 1)
        #expect(!harness.channel.isActive)
        #expect(harness.reusableCount == 0)
        try harness.finish()
    }
}

@Suite("HTTP1ClientHandler: trailers")
struct HTTP1ClientHandlerTrailerTests {
    /// A chunked response with trailer fields ends normally, the connection is reusable, and the trailer fields
    /// are not delivered as body bytes.
    @Test func trailersEndTheResponseAndAreNotBody() throws {
        let harness = try HTTP1Harness()
        let consumer = RecordingConsumer()
        _ = try harness.start(HTTP1TestPipeline.request(), consumer: consumer)
        try harness.receive("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Checksum\r\n\r\n")
        try harness.receive("5\r\nhello\r\n")
        try harness.receive("0\r\nX-Checksum: abc123\r\nX-Other: 1\r\n\r\n")
        #expect(consumer.events == [.head(200), .body("hello"), .finished])
        #expect(!consumer.body.contains("X-Checksum"))
        #expect(harness.reusableCount == 1)
        #expect(harness.channel.isActive)
        try harness.finish()
    }
}

@Suite("HTTP1ClientHandler: drain")
struct HTTP1ClientHandlerDrainTests {
    /// `drain` after the head drops the rest of the body within the limit: the completion runs once, the
    /// consumer hears nothing more (no body, no finish), and the connection is given back open and serves the
    /// next request.
    @Test func drainWithinTheLimitKeepsTheConnection() throws {
        let harness = try HTTP1Harness()
        let first = RecordingConsumer()
        let exchange = try harness.start(HTTP1TestPipeline.request(path: "/redirect"), consumer: first)
        _ = try harness.sent()
        try harness.receive("HTTP/1.1 302 Found\r\nLocation: /next\r\nContent-Length: 10\r\n\r\n0123")
        let completions = NIOLockedValueBox(0)
        exchange.drain(limit: 100) { completions.withLockedValue { $0 += 1 } }
        harness.loop.run()
        #expect(completions.withLockedValue { $0 } == 0)
        try harness.receive("456")
        #expect(completions.withLockedValue { $0 } == 0)
        try harness.receive("789")
        #expect(completions.withLockedValue { $0 } == 1)
        #expect(first.events == [.head(302), .body("0123")])
        #expect(harness.reusableCount == 1)
        #expect(harness.channel.isActive)
        // A late cancel of the drained exchange changes nothing.
        exchange.cancel()
        harness.loop.run()
        #expect(harness.channel.isActive)

        let second = RecordingConsumer()
        _ = try harness.start(HTTP1TestPipeline.request(path: "/next"), consumer: second, isReused: true)
        #expect(try SentHead(harness.sent()).requestLine == "GET /next HTTP/1.1")
        try harness.receive("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        #expect(second.events == [.head(200), .body("ok"), .finished])
        #expect(first.events == [.head(302), .body("0123")])
        #expect(completions.withLockedValue { $0 } == 1)
        #expect(harness.reusableCount == 2)
        try harness.finish()
    }

    /// Beyond the limit the drain closes the connection instead of reading on: the completion still runs once,
    /// the consumer hears nothing more, and the exchange is not retried.
    @Test func drainOverTheLimitClosesTheConnection() throws {
        let harness = try HTTP1Harness()
        let consumer = RecordingConsumer()
        let exchange = try harness.start(HTTP1TestPipeline.request(), consumer: consumer, isReused: true)
        try harness.receive("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n0123")
        let completions = NIOLockedValueBox(0)
        exchange.drain(limit: 8) { completions.withLockedValue { $0 += 1 } }
        harness.loop.run()
        try harness.receive("45678")
        #expect(harness.channel.isActive)
        #expect(completions.withLockedValue { $0 } == 0)
        try harness.receive(String(repeating: "x", count: 10))
        #expect(!harness.channel.isActive)
        #expect(completions.withLockedValue { $0 } == 1)
        #expect(consumer.events == [.head(200), .body("0123")])
        #expect(harness.reusableCount == 0)
        #expect(harness.closedCount == 1)
        try harness.finish()
        #expect(completions.withLockedValue { $0 } == 1)
    }
}

extension HTTP1ClientHandlerDrainTests {
    /// A body framed by the close (no length, not chunked) can never leave the connection reusable: the drain
    /// closes it at once instead of reading until a server that keeps the connection open closes it, or the
    /// request timeout fails the drain (a redirect's next request waited for either).
    @Test func drainOfABodyThatEndsAtTheCloseClosesTheConnectionAtOnce() throws {
        let harness = try HTTP1Harness()
        let consumer = RecordingConsumer()
        let exchange = try harness.start(HTTP1TestPipeline.request(path: "/redirect"), consumer: consumer)
        _ = try harness.sent()
        try harness.receive("HTTP/1.1 302 Found\r\nLocation: /next\r\n\r\nsome")
        let completions = NIOLockedValueBox(0)
        exchange.drain(limit: 64 << 10) { completions.withLockedValue { $0 += 1 } }
        harness.loop.run()
        #expect(!harness.channel.isActive)
        #expect(completions.withLockedValue { $0 } == 1)
        #expect(consumer.events == [.head(302), .body("some")])
        #expect(harness.reusableCount == 0)
        try harness.finish()
    }
}

@Suite("HTTP1ClientHandler: timeline")
struct HTTP1ClientHandlerTimelineTests {
    /// After a response the exchange's timeline has requestStart ≤ responseStart ≤ responseEnd, the body bytes
    /// as received, the reuse flag as passed in, and the connection's set-up times only on a fresh connection;
    /// the consumer is handed the same timeline before the finish.
    @Test(arguments: [false, true])
    func timelineRecordsTheExchange(isReused: Bool) throws {
        let harness = try HTTP1Harness()
        let connectStart = Date(timeIntervalSinceNow: -1)
        harness.handler.establishment = ConnectionEstablishment(connectStart: connectStart, connectEnd: Date())
        let consumer = RecordingConsumer()
        let exchange = try harness.start(HTTP1TestPipeline.request(), consumer: consumer, isReused: isReused)
        try harness.receive("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello")
        try harness.receive(" world")
        #expect(consumer.finished)

        let timeline = exchange.timeline.withLockedValue { $0 }
        let requestStart = try #require(timeline.requestStart)
        let responseStart = try #require(timeline.responseStart)
        let responseEnd = try #require(timeline.responseEnd)
        #expect(requestStart <= responseStart)
        #expect(responseStart <= responseEnd)
        #expect(timeline.requestEnd != nil)
        #expect(timeline.responseBodyBytesReceived == 11)
        #expect(timeline.responseBodyBytesDecoded == 11)
        #expect(timeline.isReusedConnection == isReused)
        #expect(timeline.protocolName == "http/1.1")
        #expect(timeline.connectStart == (isReused ? nil : connectStart))
        #expect(consumer.timelines == [timeline])
        try harness.finish()
    }

    /// A request nobody observes the timeline of (no task metrics, telemetry or debug lines) gets none recorded:
    /// the exchange's timeline stays as it was made and none is handed to the consumer, while the response is
    /// delivered as usual and the connection is reused.
    @Test func anUnobservedExchangeRecordsNoTimeline() throws {
        let harness = try HTTP1Harness()
        let consumer = RecordingConsumer()
        var request = try HTTP1TestPipeline.request()
        request.observesTimeline = false
        let exchange = try harness.start(request, consumer: consumer)
        try harness.receive("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
        #expect(consumer.events == [.head(200), .body("hello"), .finished])
        #expect(consumer.timelines.isEmpty)
        let timeline = exchange.timeline.withLockedValue { $0 }
        #expect(timeline.requestStart == nil)
        #expect(timeline.responseEnd == nil)
        #expect(timeline.responseBodyBytesReceived == 0)
        #expect(harness.reusableCount == 1)
        try harness.finish()
    }
}

@Suite("HTTP1ClientHandler: request timeout")
struct HTTP1ClientHandlerTimeoutTests {
    /// With no byte sent or received for the request's idle timeout the exchange fails with `timedOut` and the
    /// connection closes; bytes that arrive, even an incomplete head, restart the wait.
    @Test func silenceForTheIdleTimeoutTimesOut() throws {
        let harness = try HTTP1Harness()
        let consumer = RecordingConsumer()
        _ = try harness.start(HTTP1TestPipeline.request(idleTimeout: .seconds(5)), consumer: consumer)
        harness.loop.advanceTime(by: .seconds(4))
        #expect(consumer.events.isEmpty)
        try harness.receive("HTTP/1.1 200 OK\r\n")
        harness.loop.advanceTime(by: .seconds(4))
        #expect(consumer.events.isEmpty)
        #expect(harness.channel.isActive)
        harness.loop.advanceTime(by: .seconds(1))
        #expect(consumer.events == [.failed(.timedOut)])
        #expect(!harness.channel.isActive)
        #expect(harness.closedCount == 1)
        try harness.finish()
    }

    /// One timer serves a connection's successive exchanges. Each exchange is timed from its own start: the timer
    /// armed by the first (due at 5 s) finds the second active since 4 s and waits on to 9 s; while the connection
    /// sits idle in between, the timer closes nothing.
    @Test func eachExchangeOnAReusedConnectionIsTimedFromItsOwnStart() throws {
        let harness = try HTTP1Harness()
        let first = RecordingConsumer()
        _ = try harness.start(HTTP1TestPipeline.request(idleTimeout: .seconds(5)), consumer: first)
        harness.loop.advanceTime(by: .seconds(1))
        try harness.receive("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        #expect(first.events == [.head(200), .body("ok"), .finished])
        harness.loop.advanceTime(by: .seconds(3))
        let second = RecordingConsumer()
        _ = try harness.start(HTTP1TestPipeline.request(idleTimeout: .seconds(5)), consumer: second, isReused: true)
        harness.loop.advanceTime(by: .seconds(4))
        #expect(second.events.isEmpty)
        #expect(harness.channel.isActive)
        harness.loop.advanceTime(by: .milliseconds(999))
        #expect(second.events.isEmpty)
        harness.loop.advanceTime(by: .milliseconds(1))
        #expect(second.events == [.failed(.timedOut)])
        #expect(first.events == [.head(200), .body("ok"), .finished])
        try harness.finish()
    }

    /// A connection left idle past the last exchange's request timeout is not closed by it (only the idle
    /// connection timeout closes an idle connection), and the next exchange still gets its own full timeout.
    @Test func anIdleConnectionOutlivesTheLastRequestTimeout() throws {
        let harness = try HTTP1Harness()
        let first = RecordingConsumer()
        _ = try harness.start(HTTP1TestPipeline.request(idleTimeout: .seconds(5)), consumer: first)
        try harness.receive("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        harness.loop.advanceTime(by: .seconds(30))
        #expect(harness.channel.isActive)
        #expect(first.events == [.head(200), .finished])
        let second = RecordingConsumer()
        _ = try harness.start(HTTP1TestPipeline.request(idleTimeout: .seconds(5)), consumer: second, isReused: true)
        harness.loop.advanceTime(by: .seconds(4))
        #expect(second.events.isEmpty)
        harness.loop.advanceTime(by: .seconds(1))
        #expect(second.events == [.failed(.timedOut)])
        try harness.finish()
    }

    /// An exchange with a shorter timeout than the one before it on the connection times out at its own deadline,
    /// not at the earlier exchange's later one.
    @Test func aShorterTimeoutOnTheNextExchangeIsKept() throws {
        let harness = try HTTP1Harness()
        let first = RecordingConsumer()
        _ = try harness.start(HTTP1TestPipeline.request(idleTimeout: .seconds(30)), consumer: first)
        try harness.receive("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        let second = RecordingConsumer()
        _ = try harness.start(HTTP1TestPipeline.request(idleTimeout: .seconds(2)), consumer: second, isReused: true)
        harness.loop.advanceTime(by: .seconds(2))
        #expect(second.events == [.failed(.timedOut)])
        try harness.finish()
    }

    /// A cancelled exchange fails with `cancelled` and its connection is closed (as Darwin does).
    @Test func cancelClosesTheConnection() throws {
        let harness = try HTTP1Harness()
        let consumer = RecordingConsumer()
        let exchange = try harness.start(HTTP1TestPipeline.request(), consumer: consumer)
        try harness.receive("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n01")
        exchange.cancel()
        harness.loop.run()
        #expect(consumer.events == [.head(200), .body("01"), .failed(.cancelled)])
        #expect(!harness.channel.isActive)
        try harness.finish()
    }
}

/// A socket whose writes fail: the channel closes first and the write's promise fails after, in the order NIO
/// uses when a write to a socket fails.
private final class FailingWrites: ChannelOutboundHandler {
    typealias OutboundIn = IOData

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        context.close(promise: nil)
        promise?.fail(IOError(errnoCode: EPIPE, reason: "write"))
    }
}
