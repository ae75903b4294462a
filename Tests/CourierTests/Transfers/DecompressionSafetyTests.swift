import Courier
import CourierMockServer
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The peak resident set size of the process so far, in bytes (`ru_maxrss` is in KiB on Linux).
private func peakResidentBytes() -> Int {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return usage.ru_maxrss * 1024
}

/// The resident set size now, in bytes, from `/proc/self/statm`.
private func currentResidentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

// Serialized: the memory test measures the whole process, so no other test of this suite may run beside it.
@Suite("Decompression safety", .serialized)
struct DecompressionSafetyTests {
    @Test func aSlowReaderOfAHugeGzipBodyKeepsMemoryBounded() async throws {
        let size = 128 << 20
        let compressed = Data(Deflater.gzipZeros(count: size))
        #expect(compressed.count < 1 << 20)
        try await withServer { server in
            server.route(
                "/zeros",
                response: MockResponse(headers: [("Content-Encoding", "gzip")], body: .data(compressed))
            )
            let session = makeSession()
            let peakBefore = peakResidentBytes()
            let residentBefore = currentResidentBytes()
            var residentMax = residentBefore
            let (bytes, response) = try await session.bytes(from: server.url("/zeros"))
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            var count = 0
            var nonZero = 0
            for try await byte in bytes {
                if byte != 0 { nonZero += 1 }
                count += 1
                if count % (8 << 20) == 0 {
                    residentMax = max(residentMax, currentResidentBytes())
                    // A slow reader: the network side is far ahead of it unless backpressure holds it back.
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
            #expect(count == size)
            #expect(nonZero == 0)
            // Generous bounds; without backpressure the decoded 128 MiB piles up in the body buffer.
            let bound = 64 << 20
            #expect(residentMax - residentBefore < bound, "resident grew by \(residentMax - residentBefore)")
            #expect(peakResidentBytes() - peakBefore < bound, "peak grew by \(peakResidentBytes() - peakBefore)")
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

            let byDefault = await makeSession().runDataTask(server.url("/zeros"))
            #expect(byDefault.error == nil)
            #expect(byDefault.data?.count == size)
        }
    }

    @Test func theRatioSettingDefaultsTo2000AndIsCopied() throws {
        let configuration = URLSessionConfiguration.default
        #expect(configuration.courierMaximumDecompressionRatio == 2_000)
        configuration.courierMaximumDecompressionRatio = nil
        let copy = try #require(configuration.copy() as? URLSessionConfiguration)
        #expect(copy.courierMaximumDecompressionRatio == nil)
        copy.courierMaximumDecompressionRatio = 0
        #expect(copy.courierMaximumDecompressionRatio == 1)
        #expect(URLSessionConfiguration.ephemeral.courierMaximumDecompressionRatio == 2_000)
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
}
