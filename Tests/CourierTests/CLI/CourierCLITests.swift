import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

/// `/file`: 300,000 pattern bytes; `/dropped`: the same, cut off after 1,000 bytes.
private func routeWholeAndDroppedFiles(on server: MockServer) {
    server.route("/file", response: MockResponse(body: .pattern(length: 300_000)))
    var dropped = MockResponse(body: .pattern(length: 300_000))
    dropped.closeAfterBodyBytes = 1000
    server.route("/dropped", response: dropped)
}

extension CLISuites {
    @Suite("courier get")
    struct CourierCLITests {
        @Test func getWritesTheBodyToStandardOutput() async throws {
            try await withServer { server in
                server.route("/hello", response: .ok("hello from the CLI"))
                let result = try await runCourier(["get", server.url("/hello").absoluteString])
                #expect(result.status == 0)
                #expect(result.stdout == Data("hello from the CLI".utf8))
            }
        }

        @Test func includeHeadersAndSendMethodHeadersAndData() async throws {
            try await withServer { server in
                server.route("/post", method: "PUT", response: MockResponse(status: 201, headers: [("X-Reply", "yes")]))
                let result = try await runCourier([
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

        /// URLSession refuses a `GET` with a body, so `-X GET -d` fails with that error; `-G` sends the data in the
        /// query instead, as curl's `-G`, after the URL's own query, percent-encoding what a query cannot hold.
        @Test func aGETWithDataFailsAndDashGPutsTheDataInTheQuery() async throws {
            try await withServer { server in
                server.route("/search", response: .ok("found"))
                let refused = try await runCourier([
                    "get", server.url("/search").absoluteString, "-X", "GET", "-d", "q=1",
                ])
                #expect(refused.status != 0)
                #expect(refused.stderr.contains("-1103"))
                #expect(server.requests.isEmpty)

                let url = server.url("/search").absoluteString + "?lang=en"
                let result = try await runCourier(["get", url, "-G", "-d", "q=a%20b&tag=x y"])
                #expect(result.status == 0)
                #expect(result.stdout == Data("found".utf8))
                let recorded = try #require(server.requests.first)
                #expect(recorded.method == "GET")
                #expect(recorded.body.isEmpty)
                #expect(recorded.target == "/search?lang=en&q=a%20b&tag=x%20y")
                // A `%` that starts no escape is sent as `%25`.
                _ = try await runCourier(["get", server.url("/search").absoluteString, "-G", "-d", "note=100%"])
                #expect(server.requests.last?.target == "/search?note=100%25")
            }
        }

        @Test func outputFileAppearsOnlyWhenTheTransferSucceeds() async throws {
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try await withServer { server in
                routeWholeAndDroppedFiles(on: server)
                let good = directory.appendingPathComponent("good.bin")
                #expect(try await runCourier(["get", server.url("/file").absoluteString, "-o", good.path]).status == 0)
                #expect(try fileHoldsPattern(good, length: 300_000))
                let bad = directory.appendingPathComponent("bad.bin")
                let failed = try await runCourier(["get", server.url("/dropped").absoluteString, "-o", bad.path])
                #expect(failed.status == 56)
                #expect(failed.stderr.contains("-1005"))
                #expect(filesIn(directory) == ["good.bin"])
            }
        }

        @Test func failuresExitNonZeroWithAMessage() async throws {
            try await withServer { server in
                server.route("/missing", response: .status(404))
                let refused = try await runCourier(["get", "http://127.0.0.1:1/"])
                #expect(refused.status == 7)
                #expect(refused.stderr.contains("URLError -1004"))
                #expect(try await runCourier(["get", "ftp://example.com/"]).status != 0)
                #expect(try await runCourier(["get", server.url("/missing").absoluteString]).status == 0)
                #expect(try await runCourier(["get", server.url("/missing").absoluteString, "--fail"]).status == 22)
            }
        }

        @Test func anUnwritableOutputPathFailsBeforeAnyRequest() async throws {
            try await withServer { server in
                server.route("/x", response: .ok("x"))
                let result = try await runCourier([
                    "get", server.url("/x").absoluteString, "-o", "/nonexistent-dir/out.bin",
                ])
                #expect(result.status == 23)
                #expect(result.stderr.contains("cannot write"))
                #expect(server.requests.isEmpty)
            }
        }

        /// `courier get URL -o EXISTING` used to fail and destroy the file (FileManager.replaceItemAt on Linux).
        @Test func anExistingOutputFileIsReplacedWholeOrLeftUntouched() async throws {
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try await withServer { server in
                routeWholeAndDroppedFiles(on: server)
                let out = directory.appendingPathComponent("out.bin")
                try Data("keep\n".utf8).write(to: out)
                chmod(out.path, 0o640)

                let failed = try await runCourier(["get", server.url("/dropped").absoluteString, "-o", out.path])
                #expect(failed.status == 56)
                #expect(try Data(contentsOf: out) == Data("keep\n".utf8))
                #expect(filesIn(directory) == ["out.bin"])

                let replaced = try await runCourier(["get", server.url("/file").absoluteString, "-o", out.path])
                #expect(replaced.status == 0, "\(replaced.stderr)")
                #expect(try fileHoldsPattern(out, length: 300_000))
                #expect(filesIn(directory) == ["out.bin"])
                // The replaced file keeps its mode; the temporary's 0600 does not leak through.
                var info = stat()
                #expect(stat(out.path, &info) == 0)
                #expect(info.st_mode & 0o777 == 0o640)
            }
        }

        /// A terminated `courier get -o NAME` used to leave `.NAME.courier-partial-PID` behind for ever.
        @Test(arguments: [SIGTERM, SIGINT])
        func anInterruptedDownloadLeavesNoTemporaryFile(signal number: Int32) async throws {
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try await withServer { server in
                // About 10 s of download in 4 KiB steps, so that it still runs when the signal comes on a busy machine.
                var slow = MockResponse(body: .pattern(length: 2_000_000))
                slow.chunkSize = 4096
                slow.chunkDelay = .milliseconds(20)
                server.route("/slow", response: slow)
                server.route("/fast", response: MockResponse(body: .pattern(length: 2_000_000)))
                let out = directory.appendingPathComponent("big.bin")
                let process = try ChildProcess(
                    courierBinary().path, ["get", server.url("/slow").absoluteString, "-o", out.path])
                // Wait until the body is flowing into the temporary file, inside the run's own folder.
                var started = false
                for _ in 0..<200 {
                    if bytesInRunFolders(directory) > 0 {
                        started = true
                        break
                    }
                    try await Task.sleep(for: .milliseconds(20))
                }
                #expect(started)
                process.send(number)
                #expect(await process.exitStatus() == 128 + number)
                #expect(filesIn(directory).isEmpty)

                let again = try await runCourier(["get", server.url("/fast").absoluteString, "-o", out.path])
                #expect(again.status == 0)
                #expect(filesIn(directory) == ["big.bin"])
                #expect(try fileHoldsPattern(out, length: 2_000_000))
            }
        }

        /// A signal that comes as soon as the run's folder is made, before the response's head (and so before the
        /// download has a file): the folder goes, and nothing makes it again. Ten runs, as the moment the signal lands
        /// (before, while or after the task starts) varies. The narrowest of those races, a task started after the
        /// interruption looked for it, is shown in-process by `CLIAbandonedTaskTests`.
        @Test func aSignalAsTheDownloadStartsLeavesNoFolder() async throws {
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try await withServer { server in
                // The head comes after 50 ms: the task is under way, with no file yet, when the signal comes.
                var delayed = MockResponse(body: .pattern(length: 100_000))
                delayed.headDelay = .milliseconds(50)
                server.route("/delayed", response: delayed)
                let out = directory.appendingPathComponent("out.bin")
                for _ in 0..<10 {
                    let process = try ChildProcess(
                        courierBinary().path, ["get", server.url("/delayed").absoluteString, "-o", out.path])
                    for _ in 0..<1000 where filesIn(directory).isEmpty { try await Task.sleep(for: .milliseconds(1)) }
                    process.send(SIGTERM)
                    let status = await process.exitStatus()
                    // A run that finished before the signal came placed its file; that is complete, not left over.
                    #expect(status == 128 + SIGTERM || status == 0)
                    #expect(filesIn(directory).allSatisfy { $0 == "out.bin" }, "\(filesIn(directory))")
                    try? FileManager.default.removeItem(at: out)
                }
            }
        }

        /// `courier get -f -o FILE` used to replace FILE with the error page before exiting 22.
        @Test func failOnHTTPErrorLeavesTheOutputFileUntouched() async throws {
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try await withServer { server in
                server.route("/missing", response: MockResponse(status: 404, body: .data(Data("not found".utf8))))
                let out = directory.appendingPathComponent("out.bin")
                try Data("keep\n".utf8).write(to: out)
                let result = try await runCourier(["get", server.url("/missing").absoluteString, "-f", "-o", out.path])
                #expect(result.status == 22)
                #expect(try Data(contentsOf: out) == Data("keep\n".utf8))
                #expect(filesIn(directory) == ["out.bin"])
            }
        }

        /// `-o /dev/null` (here through a link, so a regression could only replace the link) writes to the device;
        /// it used to rename a regular file over it, which as root destroys /dev/null for everyone.
        @Test func aDeviceDestinationIsWrittenNotReplaced() async throws {
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try await withServer { server in
                server.route("/file", response: MockResponse(body: .pattern(length: 100_000)))
                let link = directory.appendingPathComponent("sink")
                try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: "/dev/null")
                let result = try await runCourier(["get", server.url("/file").absoluteString, "-o", link.path])
                #expect(result.status == 0, "\(result.stderr)")
                #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == "/dev/null")
                #expect(filesIn(directory) == ["sink"])
                var info = stat()
                #expect(stat("/dev/null", &info) == 0 && (info.st_mode & S_IFMT) == S_IFCHR)
            }
        }

        /// A destination that is a link to a regular file: the target gets the new content, the link stays.
        @Test func aLinkedDestinationKeepsItsLink() async throws {
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try await withServer { server in
                server.route("/file", response: MockResponse(body: .pattern(length: 50_000)))
                let target = directory.appendingPathComponent("target.bin")
                try Data("old".utf8).write(to: target)
                let link = directory.appendingPathComponent("link.bin")
                try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)
                let result = try await runCourier(["get", server.url("/file").absoluteString, "-o", link.path])
                #expect(result.status == 0, "\(result.stderr)")
                #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == target.path)
                #expect(try fileHoldsPattern(target, length: 50_000))
                #expect(Set(filesIn(directory)) == ["target.bin", "link.bin"])
            }
        }

        /// Started with SIGHUP ignored (nohup), the tool keeps it ignored: a hangup does not end the download.
        @Test func anIgnoredHangupStaysIgnored() async throws {
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try await withServer { server in
                // About 6 s of download, so that it still runs when the hangup comes on a busy machine.
                var slow = MockResponse(body: .pattern(length: 1_200_000))
                slow.chunkSize = 4096
                slow.chunkDelay = .milliseconds(20)
                server.route("/slow", response: slow)
                let out = directory.appendingPathComponent("big.bin")
                let process = try ChildProcess(
                    "/bin/sh",
                    [
                        "-c", "trap '' HUP; exec \"$0\" \"$@\"", courierBinary().path, "get",
                        server.url("/slow").absoluteString, "-o", out.path,
                    ])
                for _ in 0..<1000 where filesIn(directory).isEmpty {
                    try await Task.sleep(for: .milliseconds(10))
                }
                #expect(process.isRunning)
                process.send(SIGHUP)
                #expect(await process.exitStatus() == 0)
                #expect(try fileHoldsPattern(out, length: 1_200_000))
            }
        }
    }
}
