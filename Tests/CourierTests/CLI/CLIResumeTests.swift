import CourierHTTP
import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `/file`: 300,000 pattern bytes with `ETag: "v1"` and byte ranges; the first request without `Range` is cut
/// after `dropAt` body bytes.
private func serveDroppingFirstRequest(on server: MockServer, dropAt: Int, length: Int64 = 300_000) {
    let dropped = NIOLockedValueBox(false)
    server.serveResource("/file", body: .pattern(length: length)) { request, response in
        guard request.header("Range") == nil else { return }
        let first = dropped.withLockedValue { dropped in
            defer { dropped = true }
            return !dropped
        }
        if first { response.closeAfterBodyBytes = dropAt }
    }
}

/// Entries of `directory`, hidden ones included, with the partials folder's content listed as `folder/name`.
private func entries(_ directory: URL) -> Set<String> {
    var result = Set(filesIn(directory))
    for folder in result where folder.hasPrefix(".courier") {
        for name in filesIn(directory.appendingPathComponent(folder)) { result.insert("\(folder)/\(name)") }
    }
    return result
}

extension CLISuites {
    @Suite("courier get: resuming and retrying")
    struct CLIResumeTests {
        /// A download cut at several offsets leaves no output file but resume data beside it; `-C -` asks for the rest
        /// with `Range` and `If-Range` and ends with the exact file and nothing else.
        @Test(arguments: [1, 65_536, 299_999])
        func continueAtResumesAfterADrop(offset: Int) async throws {
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try await withServer { server in
                serveDroppingFirstRequest(on: server, dropAt: offset)
                let out = directory.appendingPathComponent("out.bin")
                let arguments = ["get", server.url("/file").absoluteString, "-o", out.path, "-C", "-"]
                let first = try await runCourier(arguments)
                #expect(first.status == 56, "\(first.stderr)")
                #expect(first.stderr.contains("-C -"))
                #expect(!FileManager.default.fileExists(atPath: out.path))
                #expect(FileManager.default.fileExists(atPath: out.path + ".courier-partial"))
                #expect(entries(directory).contains(".courier-partials"))

                let second = try await runCourier(arguments)
                #expect(second.status == 0, "\(second.stderr)")
                #expect(try fileHoldsPattern(out, length: 300_000))
                let resumed = try #require(server.requests(path: "/file").last)
                #expect(resumed.header("Range") == "bytes=\(offset)-")
                #expect(resumed.header("If-Range") == "\"v1\"")
                #expect(entries(directory) == ["out.bin"])
            }
        }

        /// `--retry` continues a dropped download from where it stopped, in the same run.
        @Test(arguments: [1000, 120_000, 299_000])
        func retryResumesInsteadOfRestarting(offset: Int) async throws {
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try await withServer { server in
                serveDroppingFirstRequest(on: server, dropAt: offset)
                let out = directory.appendingPathComponent("out.bin")
                let result = try await runCourier([
                    "get", server.url("/file").absoluteString, "-o", out.path, "--retry", "2", "--retry-delay", "0.05",
                ])
                #expect(result.status == 0, "\(result.stderr)")
                #expect(result.stderr.contains("retry 1 of 2"))
                #expect(try fileHoldsPattern(out, length: 300_000))
                let requests = server.requests(path: "/file")
                #expect(requests.count == 2)
                #expect(requests.last?.header("Range") == "bytes=\(offset)-")
                #expect(entries(directory) == ["out.bin"])
            }
        }

        /// When the file changed on the server, `-C -` starts over and ends with the new file, not a splice.
        @Test func aChangedValidatorRestartsCleanly() async throws {
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try await withServer { server in
                serveDroppingFirstRequest(on: server, dropAt: 100_000)
                let out = directory.appendingPathComponent("out.bin")
                let arguments = ["get", server.url("/file").absoluteString, "-o", out.path, "-C", "-"]
                #expect(try await runCourier(arguments).status == 56)
                let replacement = Data((0..<250_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
                server.serveResource("/file", body: .data(replacement), etag: "\"v2\"")
                let second = try await runCourier(arguments)
                #expect(second.status == 0, "\(second.stderr)")
                #expect(try Data(contentsOf: out) == replacement)
                #expect(server.requests(path: "/file").last?.header("If-Range") == "\"v1\"")
                #expect(entries(directory) == ["out.bin"])
            }
        }

        /// A server without validators or ranges: nothing can be continued, so `-C -` downloads the whole file again.
        @Test func noValidatorMeansAFullDownload() async throws {
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try await withServer { server in
                let count = NIOLockedValueBox(0)
                server.route("/plain") { _ in
                    var response = MockResponse(body: .pattern(length: 200_000))
                    if count.withLockedValue({ count in
                        defer { count += 1 }
                        return count == 0
                    }) {
                        response.closeAfterBodyBytes = 50_000
                    }
                    return response
                }
                let out = directory.appendingPathComponent("out.bin")
                let arguments = ["get", server.url("/plain").absoluteString, "-o", out.path, "-C", "-"]
                #expect(try await runCourier(arguments).status == 56)
                let second = try await runCourier(arguments)
                #expect(second.status == 0, "\(second.stderr)")
                #expect(try fileHoldsPattern(out, length: 200_000))
                #expect(server.requests(path: "/plain").last?.header("Range") == nil)
                #expect(entries(directory) == ["out.bin"])
            }
        }

        /// Ctrl-C during a `-C -` download keeps its resume data; the next run finishes it.
        @Test func anInterruptedContinuableDownloadCanBeFinished() async throws {
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try await withServer { server in
                // The first answer trickles (about 10 s), so that the signal comes while it runs.
                server.serveResource("/file", body: .pattern(length: 300_000)) { request, response in
                    if request.header("Range") == nil {
                        response.chunkSize = 2048
                        response.chunkDelay = .milliseconds(60)
                    }
                }
                let out = directory.appendingPathComponent("out.bin")
                let arguments = ["get", server.url("/file").absoluteString, "-o", out.path, "-C", "-"]
                let process = try ChildProcess(courierBinary().path, arguments)
                let partials = directory.appendingPathComponent(".courier-partials")
                var flowing = false
                for _ in 0..<500 {
                    let sizes = filesIn(partials).compactMap {
                        try? FileManager.default.attributesOfItem(atPath: partials.appendingPathComponent($0).path)[
                            .size]
                            as? Int
                    }
                    if sizes.contains(where: { $0 > 4096 }) {
                        flowing = true
                        break
                    }
                    try await Task.sleep(for: .milliseconds(20))
                }
                #expect(flowing)
                process.send(SIGINT)
                #expect(await process.exitStatus() == 130)
                #expect(!FileManager.default.fileExists(atPath: out.path))
                #expect(FileManager.default.fileExists(atPath: out.path + ".courier-partial"))

                let second = try await runCourier(arguments)
                #expect(second.status == 0, "\(second.stderr)")
                #expect(try fileHoldsPattern(out, length: 300_000))
                let range = try #require(server.requests(path: "/file").last?.header("Range"))
                #expect(range.hasPrefix("bytes=") && range != "bytes=0-")
                #expect(entries(directory) == ["out.bin"])
            }
        }

        /// The retry message tells the wait that really comes: a `--retry-delay` beyond a day waits a day, and says so
        /// (it printed the uncapped figure). The process is stopped while it waits.
        @Test func theRetryMessageTellsTheCappedWait() async throws {
            try await withServer { server in
                server.route("/down", response: MockResponse(status: 503, body: .data(Data("down".utf8))))
                let child = try ChildProcess(
                    courierBinary().path,
                    [
                        "get", server.url("/down").absoluteString, "-o", "/dev/null", "--retry", "1", "--retry-delay",
                        "1000000",
                    ],
                    standardOutput: .discard, standardError: .pipe)
                let errors = try #require(child.standardError)
                // Stopped after 30 s whatever it printed, so that a message in another form fails the test instead
                // of leaving it reading until the day-long wait ends.
                let stopper = Task {
                    try await Task.sleep(for: .seconds(30))
                    child.send(SIGTERM)
                }
                defer { stopper.cancel() }
                // Blocking reads, on a thread of their own: not on one of the few the concurrent tests share.
                let text = await onOwnThread {
                    var text = ""
                    while !text.contains(" s\n") {
                        let chunk = errors.availableData
                        if chunk.isEmpty { break }
                        text += String(decoding: chunk, as: UTF8.self)
                    }
                    return text
                }
                child.send(SIGTERM)
                _ = await child.exitStatus()
                #expect(text.contains("retry 1 of 1 in 86400.0 s"), "\(text)")
            }
        }

        /// A planted or broken record is never followed: a symbolic link in its place (to a record that would be
        /// valid: an interrupted download's own, moved away), or bytes that are not resume data, and the download
        /// starts over (no `Range`) and ends complete.
        @Test(arguments: ["link", "garbage"])
        func aHostileRecordIsIgnored(kind: String) async throws {
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try await withServer { server in
                if kind == "link" {
                    serveDroppingFirstRequest(on: server, dropAt: 10_000, length: 100_000)
                } else {
                    server.serveResource("/file", body: .pattern(length: 100_000))
                }
                let out = directory.appendingPathComponent("out.bin")
                let record = directory.appendingPathComponent("out.bin.courier-partial")
                if kind == "link" {
                    // A real record, which a run following the link would continue from with `Range`.
                    let cut = try await runCourier([
                        "get", server.url("/file").absoluteString, "-o", out.path, "-C", "-",
                    ])
                    #expect(cut.status == 56, "\(cut.stderr)")
                    let elsewhere = directory.appendingPathComponent("elsewhere")
                    try FileManager.default.moveItem(at: record, to: elsewhere)
                    try FileManager.default.createSymbolicLink(at: record, withDestinationURL: elsewhere)
                } else {
                    try Data("<plist>not resume data</plist>".utf8).write(to: record)
                }
                let result = try await runCourier([
                    "get", server.url("/file").absoluteString, "-o", out.path, "-C", "-",
                ])
                #expect(result.status == 0, "\(result.stderr)")
                #expect(try fileHoldsPattern(out, length: 100_000))
                #expect(server.requests(path: "/file").last?.header("Range") == nil)
            }
        }

        /// A record Courier refuses to resume from makes the tool delete nothing either: one that names a file of the
        /// user's in the partials folder that is not a download file, or one whose partials folder was replaced by a
        /// symbolic link (the unlink followed it to the file of that name in the linked folder). Both were deleted.
        @Test(arguments: ["foreign-name", "linked-folder"])
        func aRefusedRecordDeletesNoFile(kind: String) async throws {
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try await withServer { server in
                serveDroppingFirstRequest(on: server, dropAt: 10_000, length: 100_000)
                let out = directory.appendingPathComponent("out.bin")
                let arguments = ["get", server.url("/file").absoluteString, "-o", out.path, "-C", "-"]
                let cut = try await runCourier(arguments)
                #expect(cut.status == 56, "\(cut.stderr)")
                let partials = directory.appendingPathComponent(".courier-partials")
                let record = directory.appendingPathComponent("out.bin.courier-partial")
                let kept: URL
                let expected: Data
                if kind == "foreign-name" {
                    kept = partials.appendingPathComponent("notes.txt")
                    expected = Data("the user's own".utf8)
                    try expected.write(to: kept)
                    let original = try ResumeData(decoding: Data(contentsOf: record))
                    try ResumeData(
                        downloadURL: original.downloadURL, bytesReceived: 0, entityTag: original.entityTag,
                        serverDownloadDate: original.serverDownloadDate, tempFileName: kept.lastPathComponent,
                        originalRequest: original.originalRequest, currentRequest: original.currentRequest
                    ).encoded().write(to: record)
                } else {
                    let elsewhere = directory.appendingPathComponent("elsewhere")
                    try FileManager.default.moveItem(at: partials, to: elsewhere)
                    try FileManager.default.createSymbolicLink(at: partials, withDestinationURL: elsewhere)
                    let name = try #require(filesIn(elsewhere).first)
                    kept = elsewhere.appendingPathComponent(name)
                    expected = try Data(contentsOf: kept)
                }
                let second = try await runCourier(arguments)
                #expect(try Data(contentsOf: kept) == expected, "\(second.stderr)")
                if kind == "foreign-name" {
                    // The record was given up: the download started over and completed.
                    #expect(second.status == 0, "\(second.stderr)")
                    #expect(try fileHoldsPattern(out, length: 100_000))
                    #expect(server.requests(path: "/file").last?.header("Range") == nil)
                } else {
                    // Courier writes nothing through the link either.
                    #expect(second.status != 0)
                }
            }
        }

        /// A record for another URL is not continued: the bytes would belong to another file.
        @Test func aRecordForAnotherURLIsIgnored() async throws {
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try await withServer { server in
                serveDroppingFirstRequest(on: server, dropAt: 10_000)
                server.serveResource("/other", body: .pattern(length: 50_000))
                let out = directory.appendingPathComponent("out.bin")
                #expect(
                    try await runCourier(["get", server.url("/file").absoluteString, "-o", out.path, "-C", "-"]).status
                        == 56)
                let other = try await runCourier([
                    "get", server.url("/other").absoluteString, "-o", out.path, "-C", "-",
                ])
                #expect(other.status == 0, "\(other.stderr)")
                #expect(other.stderr.contains("another URL"))
                #expect(try fileHoldsPattern(out, length: 50_000))
                #expect(server.requests(path: "/other").last?.header("Range") == nil)
                // The other URL's partial bytes went with its record: nothing is left beside the file.
                #expect(entries(directory) == ["out.bin"])
            }
        }

        /// A record whose partial file was cut (by hand, a full disk) cannot be continued: the download starts over,
        /// and the useless partial file does not stay behind.
        @Test func aRecordWhosePartialFileWasCutStartsOverAndLeavesNothing() async throws {
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try await withServer { server in
                serveDroppingFirstRequest(on: server, dropAt: 100_000)
                let out = directory.appendingPathComponent("out.bin")
                let arguments = ["get", server.url("/file").absoluteString, "-o", out.path, "-C", "-"]
                #expect(try await runCourier(arguments).status == 56)
                let partials = directory.appendingPathComponent(".courier-partials")
                let partial = try #require(filesIn(partials).first.map { partials.appendingPathComponent($0) })
                #expect(truncate(partial.path, 10) == 0)
                let second = try await runCourier(arguments)
                #expect(second.status == 0, "\(second.stderr)")
                #expect(second.stderr.contains("starting over"))
                #expect(try fileHoldsPattern(out, length: 300_000))
                #expect(entries(directory) == ["out.bin"])
            }
        }

        /// 503 with `Retry-After: 0`, then the file: `--retry` asks again and the error body is never written.
        @Test func retryAsksAgainAfterATransientStatus() async throws {
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try await withServer { server in
                let count = NIOLockedValueBox(0)
                server.route("/busy") { _ in
                    let attempt = count.withLockedValue { count in
                        defer { count += 1 }
                        return count
                    }
                    return attempt == 0
                        ? MockResponse(status: 503, headers: [("Retry-After", "0")], body: .data(Data("busy".utf8)))
                        : MockResponse(body: .pattern(length: 10_000))
                }
                server.route("/down", response: MockResponse(status: 503, body: .data(Data("down".utf8))))
                let out = directory.appendingPathComponent("out.bin")
                let result = try await runCourier([
                    "get", server.url("/busy").absoluteString, "-o", out.path, "--retry", "3", "--retry-delay", "0.05",
                ])
                #expect(result.status == 0, "\(result.stderr)")
                #expect(try fileHoldsPattern(out, length: 10_000))
                #expect(server.requests(path: "/busy").count == 2)

                // Retries used up: the last answer is the result, and with -f it is an error.
                let down = directory.appendingPathComponent("down.bin")
                let failed = try await runCourier([
                    "get", server.url("/down").absoluteString, "-o", down.path, "--retry", "2", "--retry-delay", "0.05",
                    "-f",
                ])
                #expect(failed.status == 22)
                #expect(server.requests(path: "/down").count == 3)
                // --retry-max-time: no retry starts once that much time has passed since the first attempt. The first
                // retry is decided at once (one more request), the second after the 2 s delay, past the bound. A
                // machine stalled past the bound before the first decision makes no retry at all: 1 or 2 requests,
                // never the 6 that five retries would make.
                let bounded = try await runCourier([
                    "get", server.url("/down").absoluteString, "-o", down.path, "--retry", "5", "--retry-delay", "2",
                    "--retry-max-time", "1.5", "-f",
                ])
                #expect(bounded.status == 22)
                #expect((4...5).contains(server.requests(path: "/down").count))
                #expect(entries(directory) == ["out.bin"])
            }
        }
    }
}
