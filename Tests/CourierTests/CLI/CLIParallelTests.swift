import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

extension CLISuites {
    /// Several URLs in one command, at once with `-Z`, and `--limit-rate`.
    @Suite("courier get: several transfers and rate limits")
    struct CLIParallelTests {
        /// Four downloads at once, each byte-exact in its own file; a summary line; the first failure's status.
        @Test func parallelDownloadsAreByteExact() async throws {
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try await withServer { server in
                let lengths: [Int64] = [1, 70_000, 300_000, 1_000_000]
                for (index, length) in lengths.enumerated() {
                    var response = MockResponse(body: .pattern(length: length))
                    response.chunkSize = 8192
                    response.chunkDelay = .milliseconds(2)
                    server.route("/f\(index)", response: response)
                }
                server.route("/missing", response: .status(404))
                var arguments = ["get", "-Z", "--parallel-max", "3", "-f"]
                for index in lengths.indices {
                    arguments += ["-o", directory.appendingPathComponent("f\(index).bin").path]
                }
                arguments += lengths.indices.map { server.url("/f\($0)").absoluteString }
                arguments.append(server.url("/missing").absoluteString)
                let result = try await runCourier(arguments)
                #expect(result.status == 22, "\(result.stderr)")
                #expect(result.stderr.contains("5 transfers, 4 succeeded, 1 failed"))
                for (index, length) in lengths.enumerated() {
                    #expect(try fileHoldsPattern(directory.appendingPathComponent("f\(index).bin"), length: length))
                }
                // The failed one wrote to standard output (no -o for it): nothing, as -f asks.
                #expect(result.stdout.isEmpty)
                #expect(Set(filesIn(directory)) == Set(lengths.indices.map { "f\($0).bin" }))
            }
        }

        /// Each download has a session, and so a connection pool, of its own: once it ends, its keep-alive
        /// connection is closed, not kept open for a minute until the run ends (a command with hundreds of URLs
        /// held one for each and ran out of file descriptors).
        @Test func finishedDownloadsLeaveNoConnectionOpen() async throws {
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try await withServer { server in
                for index in 0..<4 { server.route("/f\(index)", response: .ok("file \(index)")) }
                server.route("/slow", response: .delayed("slow", by: .seconds(3)))
                let urls = (0..<4).map { server.url("/f\($0)").absoluteString } + [server.url("/slow").absoluteString]
                let arguments = ["get", "-O", "--output-dir", directory.path] + urls
                async let run = runCourier(arguments)
                for _ in 0..<500 where server.requests(path: "/slow").isEmpty {
                    try await Task.sleep(for: .milliseconds(20))
                }
                // While the last transfer waits for its answer, only its own connection is open.
                for _ in 0..<100 where server.openConnectionCount > 1 {
                    try await Task.sleep(for: .milliseconds(20))
                }
                let open = server.openConnectionCount
                let result = try await run
                #expect(result.status == 0, "\(result.stderr)")
                #expect(open == 1)
                #expect(Set(filesIn(directory)) == ["f0", "f1", "f2", "f3", "slow"])
            }
        }

        /// The transfers of a command without `-Z` run one after another, in order.
        @Test func sequentialTransfersRunInOrder() async throws {
            try await withServer { server in
                server.route("/a", response: .ok("A"))
                server.route("/b", response: .ok("B"))
                let result = try await runCourier([
                    "get", server.url("/a").absoluteString, server.url("/b").absoluteString,
                ])
                #expect(result.status == 0)
                #expect(result.stdout == Data("AB".utf8))
                #expect(server.requests.map(\.target) == ["/a", "/b"])
            }
        }

        /// A transfer that has not started yet has nothing on disk: one download folder at a time, for the
        /// transfer that runs (they used to be made for every URL when the command started).
        @Test func waitingTransfersMakeNoFolder() async throws {
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try await withServer { server in
                var slow = MockResponse(body: .pattern(length: 200_000))
                slow.chunkSize = 4096
                slow.chunkDelay = .milliseconds(20)
                server.route("/slow", response: slow)
                server.route("/fast", response: .ok("fast"))
                let child = try ChildProcess(
                    courierBinary().path,
                    [
                        "get", "-o", directory.appendingPathComponent("one").path, "-o",
                        directory.appendingPathComponent("two").path, "-o",
                        directory.appendingPathComponent("three").path, server.url("/slow").absoluteString,
                        server.url("/fast").absoluteString, server.url("/fast").absoluteString,
                    ])
                for _ in 0..<500 where server.requests(path: "/slow").isEmpty {
                    try await Task.sleep(for: .milliseconds(10))
                }
                let folders = filesIn(directory).filter { $0.hasPrefix(".courier-") }
                // The transfers run one after another: while no /fast request has arrived, the slow one was still
                // running when the folder was listed, and only its folder may exist. (A machine that stalls for
                // longer than the slow transfer lets it end first; then there is at most the next one's.)
                if server.requests(path: "/fast").isEmpty {
                    #expect(folders.count == 1, "\(folders)")
                } else {
                    #expect(folders.count <= 1, "\(folders)")
                }
                #expect(await child.exitStatus() == 0)
                #expect(Set(filesIn(directory)) == ["one", "two", "three"])
            }
        }

        /// `--limit-rate 100K` over a 300 KiB body: about 3 s, within 20% of the rate (from the tool's own
        /// `%{speed_download}`, and the wall clock as a floor).
        @Test func limitRateHoldsTheRate() async throws {
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try await withServer { server in
                server.route("/r", response: MockResponse(body: .pattern(length: 300 * 1024)))
                let out = directory.appendingPathComponent("r.bin")
                let started = ContinuousClock.now
                let result = try await runCourier([
                    "get", server.url("/r").absoluteString, "-o", out.path, "--limit-rate", "100K", "-w",
                    "%{speed_download}",
                ])
                let elapsed = ContinuousClock.now - started
                #expect(result.status == 0, "\(result.stderr)")
                #expect(try fileHoldsPattern(out, length: 300 * 1024))
                let speed = try #require(Double(String(decoding: result.stdout, as: UTF8.self)))
                #expect(speed <= 1.2 * 102_400 && speed >= 0.8 * 102_400, "\(speed) B/s")
                // It cannot have been faster than the rate allows (less the first burst).
                #expect(elapsed >= .milliseconds(2400))
            }
        }

        /// `--limit-rate 0` (and `0K`) is no limit, as curl reads it: the transfer runs, it is not refused.
        @Test(arguments: ["0", "0K"])
        func aZeroLimitRateIsNoLimit(rate: String) async throws {
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try await withServer { server in
                server.route("/r", response: MockResponse(body: .pattern(length: 64 * 1024)))
                let out = directory.appendingPathComponent("r.bin")
                let result = try await runCourier([
                    "get", server.url("/r").absoluteString, "-o", out.path, "--limit-rate", rate,
                ])
                #expect(result.status == 0, "\(result.stderr)")
                #expect(try fileHoldsPattern(out, length: 64 * 1024))
            }
        }
    }
}
