import Courier
import CourierMockServer
import CourierTestSupport
import Dispatch
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

private func peakResidentBytes(of pid: Int32) -> Int {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") })
    else { return 0 }
    let kibibytes = line.split(separator: " ").compactMap { Int($0) }.first ?? 0
    return kibibytes * 1024
}

/// Runs `courier get url` and reads its standard output slowly (a pause every `pauseEvery` bytes), sampling the
/// child's peak resident set size as it goes; `nonZero` counts the chunks read with a byte other than 0. The child
/// measures only its own memory, so tests running in parallel in this process cannot disturb the figure.
private func slowlyReadCourierGet(_ url: URL, pauseEvery: Int) async throws -> (bytes: Int, nonZero: Int, peak: Int) {
    let process = try ChildProcess(courierBinary().path, ["get", url.absoluteString], standardOutput: .pipe)
    let pid = process.processIdentifier
    let out = try #require(process.standardOutput)
    // Blocking reads, on a thread of their own.
    let result: (Int, Int, Int) = await onOwnThread {
        var count = 0
        var nonZero = 0
        var peak = peakResidentBytes(of: pid)
        var nextPause = pauseEvery
        while let chunk = try? out.read(upToCount: 64 * 1024), !chunk.isEmpty {
            count += chunk.count
            // Compared whole (memcmp), not byte by byte: 128 MiB one byte at a time is seconds in a debug build.
            if chunk != Data(count: chunk.count) { nonZero += 1 }
            if count >= nextPause {
                nextPause += pauseEvery
                peak = max(peak, peakResidentBytes(of: pid))
                usleep(20_000)
            }
        }
        return (count, nonZero, peak)
    }
    await process.exitStatus()
    return result
}

@Suite("Decompression safety")
struct DecompressionSafetyTests {
    @Test func aSlowReaderOfAHugeGzipBodyKeepsMemoryBounded() async throws {
        let size = 128 << 20
        let compressed = Data(Deflater.gzipZeros(count: size))
        #expect(compressed.count < 1 << 20)
        try await withServer { server in
            server.route(
                "/zeros", response: MockResponse(headers: [("Content-Encoding", "gzip")], body: .data(compressed)))
            server.route(
                "/small",
                response: MockResponse(
                    headers: [("Content-Encoding", "gzip")], body: .data(Data(Deflater.gzipZeros(count: 1 << 20)))))
            // The same process reading a small body shows what the program itself needs.
            let small = try await slowlyReadCourierGet(server.url("/small"), pauseEvery: 256 * 1024)
            #expect(small.bytes == 1 << 20)
            let huge = try await slowlyReadCourierGet(server.url("/zeros"), pauseEvery: 8 << 20)
            #expect(huge.bytes == size)
            #expect(huge.nonZero == 0)
            #expect(small.peak > 0 && huge.peak > 0)
            // Generous bound; without backpressure the decoded 128 MiB pile up waiting for the slow reader.
            #expect(huge.peak - small.peak < 64 << 20, "peak RSS \(huge.peak >> 20) MiB vs \(small.peak >> 20) MiB")
        }
    }

    @Test func aLowDecompressionRatioFailsAGzipBodyAndNilTurnsTheGuardOff() async throws {
        let size = 4 << 20
        let compressed = Data(Deflater.gzipZeros(count: size))
        try await withServer { server in
            server.route(
                "/zeros",
                response: MockResponse(headers: [("Content-Encoding", "gzip")], body: .data(compressed))
            )
            let limited = await makeSession { $0.courierMaximumDecompressionRatio = 50 }
                .runDataTask(server.url("/zeros"))
            #expect(limited.urlError?.code == .cannotDecodeContentData)
            #expect(limited.urlError?.localizedDescription.contains("courierMaximumDecompressionRatio") == true)

            let unlimited = await makeSession { $0.courierMaximumDecompressionRatio = nil }
                .runDataTask(server.url("/zeros"))
            #expect(unlimited.error == nil)
            #expect(unlimited.data == Data(count: size))

            // The default (1,000:1) stops a body of zeros, which deflates about 1,030:1.
            let byDefault = await makeSession().runDataTask(server.url("/zeros"))
            #expect(byDefault.urlError?.code == .cannotDecodeContentData)
        }
    }

    /// Highly compressible real content (here repetitive text, well over 100:1) passes the default guard.
    @Test func repetitiveTextPassesTheDefaultGuard() async throws {
        let text = Data((1...200_000).map { "{\"id\": \($0 % 10), \"status\": \"ok\"}\n" }.joined().utf8)
        let compressed = Data(Deflater.compress(Array(text), as: .gzip))
        #expect(text.count / compressed.count > 100)
        try await withServer { server in
            server.route(
                "/text", response: MockResponse(headers: [("Content-Encoding", "gzip")], body: .data(compressed)))
            let outcome = await makeSession().runDataTask(server.url("/text"))
            #expect(outcome.error == nil)
            #expect(outcome.data == text)
        }
    }

    @Test func theRatioSettingDefaultsTo1000AndIsCopied() throws {
        let configuration = URLSessionConfiguration.default
        #expect(configuration.courierMaximumDecompressionRatio == 1_000)
        configuration.courierMaximumDecompressionRatio = nil
        let copy = try #require(configuration.copy() as? URLSessionConfiguration)
        #expect(copy.courierMaximumDecompressionRatio == nil)
        copy.courierMaximumDecompressionRatio = 0
        #expect(copy.courierMaximumDecompressionRatio == 1)
        #expect(URLSessionConfiguration.ephemeral.courierMaximumDecompressionRatio == 1_000)
    }

    @Test(arguments: ["gzip", "x-gzip", "deflate"])
    func eachDecodedCodingStillDecodes(coding: String) async throws {
        let text = Array("decoded, decoded, decoded\n".utf8)
        let body = Deflater.compress(text, as: coding == "deflate" ? .zlib : .gzip)
        let rawDeflate = Deflater.compress(text, as: .raw)
        try await withServer { server in
            server.route("/c", response: MockResponse(headers: [("Content-Encoding", coding)], body: .data(Data(body))))
            server.route(
                "/raw",
                response: MockResponse(headers: [("Content-Encoding", "deflate")], body: .data(Data(rawDeflate))))
            let session = makeSession()
            #expect(await session.runDataTask(server.url("/c")).data == Data(text))
            #expect(await session.runDataTask(server.url("/raw")).data == Data(text))
        }
    }

    /// A br body larger than a step arrives decoded, with the response's headers as the server sent them.
    @Test func aBrotliBodyArrivesDecoded() async throws {
        let text = Data((1...20_000).map { "{\"id\": \($0), \"status\": \"ok\"}\n" }.joined().utf8)
        let compressed = Data(BrotliCompressor.compress(Array(text), quality: 11))
        #expect(compressed.count < text.count / 10)
        try await withServer { server in
            server.route("/br", response: MockResponse(headers: [("Content-Encoding", "br")], body: .data(compressed)))
            let outcome = await makeSession().runDataTask(server.url("/br"))
            #expect(outcome.error == nil)
            #expect(outcome.data == text)
            #expect(outcome.http?.value(forHTTPHeaderField: "Content-Encoding") == "br")
            #expect(server.requests(path: "/br").first?.header("Accept-Encoding") == "gzip, deflate, br")
        }
    }

    /// Brotli goes far past deflate's 1,032:1: a few dozen bytes on the wire stand for megabytes of zeros.
    @Test func aBrotliBombFailsWithCannotDecodeContentData() async throws {
        let size = 64 << 20
        let compressed = Data(BrotliCompressor.zeros(count: size))
        #expect(compressed.count < 1 << 10)
        try await withServer { server in
            server.route(
                "/bomb", response: MockResponse(headers: [("Content-Encoding", "br")], body: .data(compressed)))
            let byDefault = await makeSession().runDataTask(server.url("/bomb"))
            #expect(byDefault.urlError?.code == .cannotDecodeContentData)
            #expect(byDefault.urlError?.localizedDescription.contains("courierMaximumDecompressionRatio") == true)
        }
    }

    @Test func aGzipBodyStillBeingInflatedWhenTheServerClosesIsDeliveredWhole() async throws {
        let size = 8 << 20
        let compressed = Deflater.gzipZeros(count: size)
        var response = MockResponse()
        // The whole response in one write, then the server closes the connection.
        let head = "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: \(compressed.count)\r\n\r\n"
        response.raw = Data(head.utf8) + Data(compressed)
        try await withServer { server in
            server.route("/closing", response: response)
            // Zeros deflate beyond the default guard; the close is what this test is about.
            let session = makeSession { $0.courierMaximumDecompressionRatio = nil }
            let (bytes, _) = try await session.bytes(from: server.url("/closing"))
            // The reader is paused with most of the body still compressed when the close arrives.
            try await Task.sleep(for: .milliseconds(300))
            // Counted, and checked once: an expectation per byte is seconds of work in a debug build.
            var count = 0
            var nonZero = 0
            for try await byte in bytes {
                if byte != 0 { nonZero += 1 }
                count += 1
            }
            #expect(count == size)
            #expect(nonZero == 0)
        }
    }

    /// Over h2 a stream closes as its last frame arrives, however much of a coded body is still to decode: here the
    /// reader holds back until long after the server is done, so the task is paused when its stream closes, and most
    /// of the body is still compressed. The stream's handler must stay reachable (for the resume) and alive until the
    /// decoding ends; the resource timeout turns a task that never ends into a failure.
    @Test(arguments: WireProtocol.allCases)
    func aCodedBodyStillBeingDecodedWhenItsStreamClosesArrivesWhole(over wire: WireProtocol) async throws {
        let text = Data((1...100_000).map { "{\"id\": \($0 % 10), \"status\": \"ok\"}\n" }.joined().utf8)
        let compressed = Data(Deflater.compress(Array(text), as: .gzip))
        // Many decoding steps, and well within one HTTP/2 flow-control window.
        #expect(text.count > 2 << 20 && compressed.count < 256 << 10)
        try await withServer(wire) { server in
            var response = MockResponse(headers: [("Content-Encoding", "gzip")], body: .data(compressed))
            // The first pieces decode to more than the reader buffers before the task is paused; the rest, and the
            // stream's end, come while it is.
            response.chunkSize = 2 << 10
            response.chunkDelay = .milliseconds(50)
            server.route("/coded", response: response)
            let session = makeSession { $0.timeoutIntervalForResource = 30 }
            defer { session.invalidateAndCancel() }
            let (bytes, _) = try await session.bytes(from: server.url("/coded"))
            try await Task.sleep(for: .seconds(2))
            var received: [UInt8] = []
            received.reserveCapacity(text.count)
            do {
                for try await byte in bytes { received.append(byte) }
            } catch {
                Issue.record("the body ended with \(error) after \(received.count) of \(text.count) bytes")
            }
            #expect(received.count == text.count)
            // Compared outside `#expect`, which would diff megabytes on a mismatch (for many minutes).
            let arrivedWhole = Data(received) == text
            #expect(arrivedWhole)
        }
    }
}
