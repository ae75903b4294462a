import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

@Suite("Response heads: trickling, framing edge cases, unparsable responses")
struct ResponseHeadTests {
    @Test func aHeadTricklingInWithinTheRequestTimeoutSucceeds() async throws {
        // 8 pieces 2 s apart: the head takes 16 s, longer than the 12 s timeout, while each piece comes well within
        // it. (With 0.45 s pieces and a 3 s timeout, and then 1 s pieces and a 6 s one, a machine running the whole
        // suite on 2 cores stalled the test past the timeout between two pieces.)
        let head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Slow: yes\r\nContent-Length: 5\r\n\r\nhello"
        let pieceSize = (head.utf8.count + 7) / 8
        try await withServer { server in
            server.route("/slow", response: .trickle(head, pieceSize: pieceSize, delay: .seconds(2)))
            let session = makeSession { $0.timeoutIntervalForRequest = 12 }
            let started = ContinuousClock.now
            let outcome = await session.runDataTask(server.url("/slow"))
            #expect(outcome.error == nil)
            #expect(outcome.data == Data("hello".utf8))
            #expect(ContinuousClock.now - started > .seconds(12))
        }
    }

    @Test func aServerStallingLongerThanTheRequestTimeoutStillTimesOut() async throws {
        let head = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
        try await withServer { server in
            // The first piece, then silence for longer than the timeout.
            server.route("/stall", response: .trickle(head, pieceSize: 10, delay: .seconds(3)))
            let session = makeSession { $0.timeoutIntervalForRequest = 1 }
            // Without the timeout the rest would arrive after 3 s and the task succeed.
            let outcome = await session.runDataTask(server.url("/stall"))
            #expect(outcome.urlError?.code == .timedOut)
        }
    }

    @Test(arguments: [
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
        "HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\nhello",
        "HTTP/1.1 200 OK\r\ncontent-length:5\r\nX: y\r\nCONTENT-LENGTH: 005\r\n\r\nhello",
        "HTTP/1.1 200 OK\nContent-Type: text/plain\nContent-Length: 5\n\nhello",
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\nContent-Length: 5\r\n\nhello",
        "HTTP/1.1 100 Continue\n\nHTTP/1.1 200 OK\nContent-Length: 5\n\nhello",
        "\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
    ])
    func lenientHeadShapesAreAccepted(raw: String) async throws {
        try await withServer { server in
            server.route("/h", response: .raw(raw))
            server.route("/trickled", response: .trickle(raw, pieceSize: 3, delay: .zero))
            let session = makeSession()
            for path in ["/h", "/trickled"] {
                let outcome = await session.runDataTask(server.url(path))
                #expect(outcome.error == nil, "\(path)")
                #expect(outcome.data == Data("hello".utf8), "\(path)")
                #expect(outcome.http?.statusCode == 200)
                #expect(outcome.http?.expectedContentLength == 5)
            }
        }
    }

    @Test(arguments: [
        ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", URLError.Code.badServerResponse),
        ("HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\nhello!", .badServerResponse),
        ("HTTP/1.1 200 OK\r\nContent-Length: 5,\r\n\r\nhello", .badServerResponse),
        ("HTTP/1.1 200 OK\rX: y\r\nContent-Length: 5\r\n\r\nhello", .cannotParseResponse),
        ("HTTP/1.1 200 OK\r\nX: a\rb\r\nContent-Length: 5\r\n\r\nhello", .cannotParseResponse),
        ("HTTP/1.1 2000 OK\r\nContent-Length: 5\r\n\r\nhello", .cannotParseResponse),
        ("ICY 200 OK\r\nContent-Length: 5\r\n\r\nhello", .cannotParseResponse),
        ("HTTP/1.1 099 Odd\r\nContent-Length: 5\r\n\r\nhello", .badServerResponse),
    ])
    func brokenHeadShapesFail(raw: String, code: URLError.Code) async throws {
        try await withServer { server in
            server.route("/h", response: .raw(raw))
            let outcome = await makeSession().runDataTask(server.url("/h"))
            #expect(outcome.urlError?.code == code)
        }
    }

    @Test func conflictingContentLengthsSayWhy() async throws {
        try await withServer { server in
            server.route(
                "/h", response: .raw("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!"))
            let outcome = await makeSession().runDataTask(server.url("/h"))
            #expect(
                outcome.urlError?.localizedDescription.contains("conflicting Content-Length values 5 and 6") == true)
        }
    }

    @Test func aLenientHeadKeepsTheConnectionReusable() async throws {
        try await withServer { server in
            // Through a real keep-alive response writer: bare LF is only in the raw test above, so here the
            // duplicate Content-Length comes from the scripted headers.
            server.route(
                "/dup",
                response: MockResponse(
                    headers: [("Content-Length", "5"), ("Content-Length", "5")], body: .data(Data("hello".utf8)))
            )
            let session = makeSession()
            for _ in 0..<3 {
                #expect(await session.runDataTask(server.url("/dup")).data == Data("hello".utf8))
            }
            #expect(server.connectionCount == 1)
        }
    }
}
