import CourierMockServer
import Foundation
import Testing

/// Runs the built `courier` executable (it sits next to the test bundle) and captures its output.
private func runCourier(_ arguments: [String]) throws -> (status: Int32, stdout: Data, stderr: String) {
    let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    var binary = directory.appendingPathComponent("courier")
    if !FileManager.default.fileExists(atPath: binary.path) {
        // Swift Testing may run from inside the .xctest bundle directory.
        binary = directory.deletingLastPathComponent().appendingPathComponent("courier")
    }
    let process = Process()
    process.executableURL = binary
    process.arguments = arguments
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    let stdout = out.fileHandleForReading.readDataToEndOfFile()
    let stderr = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, stdout, String(decoding: stderr, as: UTF8.self))
}

@Suite("courier get")
struct CourierCLITests {
    @Test func getWritesTheBodyToStandardOutput() async throws {
        try await withServer { server in
            server.route("/hello", response: .ok("hello from the CLI"))
            let result = try runCourier(["get", server.url("/hello").absoluteString])
            #expect(result.status == 0)
            #expect(result.stdout == Data("hello from the CLI".utf8))
        }
    }

    @Test func includeHeadersAndSendMethodHeadersAndData() async throws {
        try await withServer { server in
            server.route("/post", method: "PUT", response: MockResponse(status: 201, headers: [("X-Reply", "yes")]))
            let result = try runCourier([
                "get", server.url("/post").absoluteString, "-X", "put", "-H", "X-Token: abc", "-d", "a=1", "-i",
            ])
            #expect(result.status == 0)
            let text = String(decoding: result.stdout, as: UTF8.self)
            #expect(text.hasPrefix("HTTP/1.1 201"))
            #expect(text.contains("X-Reply: yes"))
            let recorded = try #require(server.requests.first)
            #expect(recorded.method == "PUT")
            #expect(recorded.header("X-Token") == "abc")
            #expect(recorded.body == Data("a=1".utf8))
        }
    }

    @Test func outputFileAppearsOnlyWhenTheTransferSucceeds() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withServer { server in
            server.route("/file", response: MockResponse(body: .pattern(length: 300_000)))
            var dropped = MockResponse(body: .pattern(length: 300_000))
            dropped.closeAfterBodyBytes = 1000
            server.route("/dropped", response: dropped)
            let good = directory.appendingPathComponent("good.bin")
            #expect(try runCourier(["get", server.url("/file").absoluteString, "-o", good.path]).status == 0)
            #expect(try fileHoldsPattern(good, length: 300_000))
            let bad = directory.appendingPathComponent("bad.bin")
            let failed = try runCourier(["get", server.url("/dropped").absoluteString, "-o", bad.path])
            #expect(failed.status == 1)
            #expect(failed.stderr.contains("-1005"))
            #expect(filesIn(directory) == ["good.bin"])
        }
    }

    @Test func failuresExitNonZeroWithAMessage() async throws {
        try await withServer { server in
            server.route("/missing", response: .status(404))
            let refused = try runCourier(["get", "http://127.0.0.1:1/"])
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("URLError -1004"))
            #expect(try runCourier(["get", "ftp://example.com/"]).status != 0)
            #expect(try runCourier(["get", server.url("/missing").absoluteString]).status == 0)
            #expect(try runCourier(["get", server.url("/missing").absoluteString, "--fail"]).status == 22)
        }
    }

    @Test func anUnwritableOutputPathFailsBeforeAnyRequest() async throws {
        try await withServer { server in
            server.route("/x", response: .ok("x"))
            let result = try runCourier(["get", server.url("/x").absoluteString, "-o", "/nonexistent-dir/out.bin"])
            #expect(result.status == 1)
            #expect(result.stderr.contains("cannot write"))
            #expect(server.requests.isEmpty)
        }
    }
}
