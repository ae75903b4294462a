import Courier
import CourierMockServer
import Foundation
import Testing

@Suite("Response heads: trickling, framing edge cases, unparsable responses")
struct ResponseHeadTests {
    @Test func aHeadTricklingInWithinTheRequestTimeoutSucceeds() async throws {
        // 8 pieces 0.45 s apart: the head takes over 3 s, each piece comes well within the 2 s timeout.
        let head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Slow: yes\r\nContent-Length: 5\r\n\r\nhello"
        let pieceSize = (head.utf8.count + 7) / 8
        try await withServer { server in
            server.route("/slow", response: .trickle(head, pieceSize: pieceSize, delay: .milliseconds(450)))
            let session = makeSession { $0.timeoutIntervalForRequest = 2 }
            let started = ContinuousClock.now
            let outcome = await session.runDataTask(server.url("/slow"))
            #expect(outcome.error == nil)
            #expect(outcome.data == Data("hello".utf8))
            #expect(ContinuousClock.now - started > .seconds(2))
        }
    }

    @Test func aServerStallingLongerThanTheRequestTimeoutStillTimesOut() async throws {
        let head = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
        try await withServer { server in
            // The first piece, then silence for longer than the timeout.
            server.route("/stall", response: .trickle(head, pieceSize: 10, delay: .seconds(3)))
            let session = makeSession { $0.timeoutIntervalForRequest = 1 }
            let started = ContinuousClock.now
            let outcome = await session.runDataTask(server.url("/stall"))
            #expect(outcome.urlError?.code == .timedOut)
            #expect(ContinuousClock.now - started < .seconds(2.5))
        }
    }
}
