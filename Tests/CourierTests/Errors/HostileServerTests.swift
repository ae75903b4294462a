import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

/// What servers and middle boxes do wrong, or on purpose: every case ends with a clear `URLError` (or a
/// well-formed response), never a crash or a hang, and never spoils a later request on the same connection.
@Suite("Hostile servers")
struct HostileServerTests {
    /// A session whose requests give up after 30 seconds, so that a hang shows as `timedOut` (5 s failed a good
    /// request on a machine running the whole suite on two cores).
    private func session() -> URLSession {
        makeSession { $0.timeoutIntervalForRequest = 30 }
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let raw: String
        /// The codes that are acceptable (Darwin's, or the nearest).
        let codes: Set<URLError.Code>
        var testDescription: String { name }
    }

    static let framing: [Case] = [
        Case(
            name: "Transfer-Encoding with Content-Length",
            raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
            codes: [.badServerResponse, .cannotParseResponse]),
        Case(
            name: "a chunk size that is not hex",
            raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
            codes: [.badServerResponse, .cannotParseResponse]),
        Case(
            name: "an overflowing chunk size",
            raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffffff\r\nhello\r\n",
            codes: [.badServerResponse, .cannotParseResponse]),
        Case(
            name: "a negative chunk size",
            raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n",
            codes: [.badServerResponse, .cannotParseResponse]),
        // Transfer codings nobody asked for (no TE field is sent): never handed over still coded.
        Case(
            name: "Transfer-Encoding gzip, read until the close",
            raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nConnection: close\r\n\r\ncoded bytes",
            codes: [.badServerResponse]),
        Case(
            name: "Transfer-Encoding gzip, chunked",
            raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nxx\r\n0\r\n\r\n",
            codes: [.badServerResponse]),
        Case(
            name: "a chunked body cut short",
            raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nhello",
            codes: [.networkConnectionLost]),
        Case(
            name: "a reset after the head",
            raw: "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n",
            codes: [.networkConnectionLost]),
        Case(
            name: "NUL in a header value",
            raw: "HTTP/1.1 200 OK\r\nX-A: a\u{0}b\r\nContent-Length: 2\r\n\r\nhi",
            codes: [.cannotParseResponse, .badServerResponse]),
        Case(
            name: "a bare CR in a header value",
            raw: "HTTP/1.1 200 OK\r\nX-A: a\rb\r\nContent-Length: 2\r\n\r\nhi",
            codes: [.cannotParseResponse, .badServerResponse]),
        Case(
            name: "a 1 MiB status line",
            raw: "HTTP/1.1 200 " + String(repeating: "O", count: 1 << 20) + "\r\nContent-Length: 2\r\n\r\nhi",
            codes: [.badServerResponse, .cannotParseResponse]),
        Case(
            name: "101 without an upgrade request",
            raw: "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nfree bytes",
            codes: [.badServerResponse]),
    ]

    @Test(arguments: framing)
    func brokenFramingFailsClearly(_ hostile: Case) async throws {
        try await withServer { server in
            server.route("/hostile", response: .raw(hostile.raw))
            let session = session()
            defer { session.finishTasksAndInvalidate() }
            let outcome = await session.runDataTask(server.url("/hostile"))
            let code = try #require(outcome.urlError?.code, "\(hostile.name) was accepted")
            #expect(hostile.codes.contains(code), "\(hostile.name): \(code)")
        }
    }

    /// The obsolete `identity` transfer coding means no coding at all: the body is read until the close.
    @Test func transferEncodingIdentityIsReadUntilTheClose() async throws {
        try await withServer { server in
            server.route(
                "/identity", response: .raw("HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n\r\nplain body"))
            let session = session()
            defer { session.finishTasksAndInvalidate() }
            let outcome = await session.runDataTask(server.url("/identity"))
            #expect(outcome.error == nil)
            #expect(outcome.data == Data("plain body".utf8))
        }
    }

    @Test func tenThousandFieldsAreAWellFormedResponse() async throws {
        try await withServer { server in
            let raw =
                "HTTP/1.1 200 OK\r\n" + String(repeating: "X-A: b\r\n", count: 10_000) + "Content-Length: 2\r\n\r\nhi"
            server.route("/fields", response: .raw(raw))
            let session = session()
            defer { session.finishTasksAndInvalidate() }
            let outcome = await session.runDataTask(server.url("/fields"))
            #expect(outcome.data == Data("hi".utf8))
            #expect(outcome.http?.value(forHTTPHeaderField: "X-A")?.split(separator: ",").count == 10_000)
        }
    }

    @Test func anObsFoldedFieldIsUnfolded() async throws {
        try await withServer { server in
            server.route(
                "/folded", response: .raw("HTTP/1.1 200 OK\r\nX-Folded: one\r\n  two\r\nContent-Length: 2\r\n\r\nhi"))
            let session = session()
            defer { session.finishTasksAndInvalidate() }
            let outcome = await session.runDataTask(server.url("/folded"))
            #expect(outcome.error == nil)
            #expect(outcome.http?.value(forHTTPHeaderField: "X-Folded") == "one two")
            #expect(outcome.data == Data("hi".utf8))
        }
    }

    @Test(arguments: [false, true])
    func theStartOfAHeadAfterAChunkedBodyNeverPrefixesTheNextResponse(head: Bool) async throws {
        try await withServer { server in
            var confused = MockResponse.ok("first")
            confused.chunked = true
            confused.trailingBytes = Data("HTTP/1.1 302 Found\r\nLocation: /evil\r\nX-Pad: ".utf8)
            server.route("/confused", response: confused)
            server.route("/next", response: .ok("next"))
            server.route("/evil", response: .ok("evil"))
            let session = session()
            defer { session.finishTasksAndInvalidate() }
            var request = URLRequest(url: server.url("/confused"))
            if head { request.httpMethod = "HEAD" }
            let first = await session.runDataTask(request)
            #expect(first.error == nil)
            let next = await session.runDataTask(server.url("/next"))
            #expect(next.error == nil)
            #expect(next.data == Data("next".utf8))
            #expect(server.requests(path: "/evil").isEmpty)
            #expect(server.requests(path: "/next").first?.connectionID != server.requests.first?.connectionID)
        }
    }

    @Test(arguments: [
        "HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nsmuggled",
        // Only the start of a head: held by the parser, it must not prefix the next response.
        "HTTP/1.1 302 Found\r\nLocation: /evil\r\nX-Pad: ",
        "H",
    ])
    func bytesAfterAContentLengthBodyNeverBecomeTheNextResponse(trailing: String) async throws {
        try await withServer { server in
            var confused = MockResponse.ok("first")
            confused.trailingBytes = Data(trailing.utf8)
            server.route("/confused", response: confused)
            server.route("/next", response: .ok("next"))
            server.route("/evil", response: .ok("evil"))
            let session = session()
            defer { session.finishTasksAndInvalidate() }
            let first = await session.runDataTask(server.url("/confused"))
            #expect(first.data == Data("first".utf8))
            try await Task.sleep(for: .milliseconds(50))  // let the extra bytes arrive on the idle connection
            let next = await session.runDataTask(server.url("/next"))
            #expect(next.error == nil)
            #expect(next.data == Data("next".utf8))
            let connections = [
                server.requests(path: "/confused").first?.connectionID,
                server.requests(path: "/next").first?.connectionID,
            ]
            #expect(connections[0] != nil && connections[0] != connections[1])
            #expect(server.requests(path: "/evil").isEmpty)
        }
    }

    /// A `Location` that tries to add a field is only a field of the 302 (the redirect goes to `/target`); one with
    /// a NUL makes the response unparseable; a 16 KiB one is followed (to a 404 here). `followedTo` is the path asked for next, or nil
    /// when the response is refused.
    @Test(arguments: [
        ("/target\r\nX-Injected: 1", "/target" as String?),
        ("/tar\u{0}get", nil),
        ("/" + String(repeating: "a", count: 16 * 1024), "/" + String(repeating: "a", count: 16 * 1024)),
    ])
    func hostileLocationsNeitherCrashNorInject(location: String, followedTo: String?) async throws {
        try await withServer { server in
            server.route(
                "/moved", response: .raw("HTTP/1.1 302 Found\r\nLocation: \(location)\r\nContent-Length: 0\r\n\r\n"))
            server.route("/target", response: .ok("target"))
            let session = session()
            defer { session.finishTasksAndInvalidate() }
            let outcome = await session.runDataTask(server.url("/moved"))
            if let followedTo {
                #expect(outcome.error == nil)
                #expect(outcome.http?.url?.path == followedTo)
                #expect(server.requests.map(\.path) == ["/moved", followedTo])
            } else {
                #expect(outcome.urlError?.code == .cannotParseResponse)
                #expect(server.requests.map(\.path) == ["/moved"])
            }
            // No request carried an injected field.
            #expect(server.requests.allSatisfy { $0.header("X-Injected") == nil })
        }
    }

    @Test func aRedirectLoopAcrossSchemesEnds() async throws {
        try await withServer(.https) { secure in
            try await withServer { plain in
                plain.route(
                    "/loop",
                    response: MockResponse(status: 302, headers: [("Location", secure.url("/loop").absoluteString)]))
                secure.route(
                    "/loop",
                    response: MockResponse(status: 302, headers: [("Location", plain.url("/loop").absoluteString)]))
                let session = makeSession {
                    $0.timeoutIntervalForRequest = 30
                    $0.courierAdditionalTrustedCertificates = [Data(secure.certificateDER)]
                }
                defer { session.finishTasksAndInvalidate() }
                let outcome = await session.runDataTask(plain.url("/loop"))
                #expect(outcome.urlError?.code == .httpTooManyRedirects)
            }
        }
    }

    @Test func earlyHintsThenTheResponseFromARawServer() async throws {
        try await withServer { server in
            server.route(
                "/hints",
                response: .raw(
                    "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
                ))
            let session = session()
            defer { session.finishTasksAndInvalidate() }
            let outcome = await session.runDataTask(server.url("/hints"))
            #expect(outcome.http?.statusCode == 200)
            #expect(outcome.data == Data("ok".utf8))
        }
    }
}
