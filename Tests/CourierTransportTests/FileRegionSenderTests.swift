import CourierHTTP
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import Testing

@testable import CourierTransport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A file body on a plain connection goes out as `FileRegion`s (`sendfile(2)`), each checked and read into the page
/// cache off the loop first (``FileRegionPreparation``).
@Suite("File bodies sent with sendfile", .enabled(if: FileRegionPreparation.isAvailable))
struct FileRegionSenderTests {
    /// A file goes out as regions of the file itself (512 KiB each, then the rest), never read through the reader,
    /// with progress per region; the reader is closed once the last region is queued. 9,000,000 bytes take three
    /// trips to the thread pool (4 MiB each).
    @Test(.timeLimit(.minutes(1)), arguments: [1_200_000, 9_000_000])
    func aFileBodyGoesOutAsRegionsOfTheFile(length: Int) async throws {
        let file = try TemporaryFile(length: length)
        defer { file.remove() }
        let source = RegionFileSource(path: file.path)
        let (channel, consumer, pool) = try await Self.startUpload(from: source, length: length)

        var closed = source.closed.makeAsyncIterator()
        #expect(await closed.next() != nil)
        var head = ""
        var regions: [Range<Int>] = []
        while let part = try await channel.readOutbound(as: IOData.self) {
            switch part {
            case .byteBuffer(let buffer): head += String(buffer: buffer)
            case .fileRegion(let region): regions.append(region.readerIndex..<region.endIndex)
            }
        }
        #expect(try SentHead(head).values("Content-Length") == ["\(length)"])
        let starts = Array(stride(from: 0, to: length, by: 524_288))
        #expect(regions == starts.map { $0..<min($0 + 524_288, length) })
        #expect(source.chunkReads.withLockedValue { $0 } == 0)

        try await channel.writeInbound(ByteBuffer(string: "HTTP/1.1 204 No Content\r\n\r\n"))
        let sent = starts.map { RecordingConsumer.Event.sent(Int64(min($0 + 524_288, length))) }
        #expect(consumer.events == sent + [.head(204), .finished])
        pool.shutdown()
        _ = try await channel.finish(acceptAlreadyClosed: true)
    }

    /// A file whose file system cannot splice (`sendfile(2)` says `EINVAL` at the first preparation, before anything
    /// was sent) goes out in chunks read from the reader, whole and from its first byte, and the descriptor made for
    /// the regions is closed. The region descriptor here is a directory's, which no file system splices from, and the
    /// body as long as the directory's size (4,096 bytes on ext4), so that it passes the size checks (a file system
    /// whose directories have no size cannot run it).
    @Test(.timeLimit(.minutes(1)), .enabled(if: directorySize(NSTemporaryDirectory()) > 0))
    func aFileThatCannotBeSplicedGoesOutInChunks() async throws {
        let directory = NSTemporaryDirectory() + "courier-nosplice-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let length = directorySize(directory)
        try #require(length > 0, "the directory's size passes no size check")
        let file = try TemporaryFile(length: length)
        defer { file.remove() }
        let source = RegionFileSource(path: file.path, regionPath: directory, servesChunks: true)
        let (channel, consumer, pool) = try await Self.startUpload(from: source, length: length)

        var closed = source.closed.makeAsyncIterator()
        #expect(await closed.next() != nil)
        var sent = ByteBuffer()
        var regions = 0
        while let part = try await channel.readOutbound(as: IOData.self) {
            switch part {
            case .byteBuffer(var buffer): sent.writeBuffer(&buffer)
            case .fileRegion: regions += 1
            }
        }
        #expect(regions == 0)
        #expect(source.chunkReads.withLockedValue { $0 } > 0)
        let text = String(buffer: sent)
        let bodyStart = try #require(text.range(of: "\r\n\r\n")).upperBound
        let body = Array(sent.readableBytesView.dropFirst(text.utf8.distance(from: text.startIndex, to: bodyStart)))
        // Compared once (a failed comparison of the arrays would print every byte).
        #expect(body.count == length)
        let bodyMatches = body == (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        #expect(bodyMatches)
        #expect(openDescriptors(on: directory) == 0)

        try await channel.writeInbound(ByteBuffer(string: "HTTP/1.1 204 No Content\r\n\r\n"))
        #expect(consumer.events.suffix(2) == [.head(204), .finished])
        pool.shutdown()
        _ = try await channel.finish(acceptAlreadyClosed: true)
    }

    /// Starts a `PUT` of `length` bytes from `source` on a plain connection that sends file regions, over a testing
    /// channel: what it writes is read with `readOutbound`, and the consumer records what the exchange reports.
    private static func startUpload(from source: RegionFileSource, length: Int) async throws
        -> (NIOAsyncTestingChannel, RecordingConsumer, ConnectionPool)
    {
        let loop = NIOAsyncTestingEventLoop()
        let channel = NIOAsyncTestingChannel(loop: loop)
        let connection = try await loop.executeInContext {
            let handler = HTTP1ClientHandler(
                endpoint: HTTP1TestPipeline.endpoint, idleConnectionTimeout: .seconds(60), protocolName: "http/1.1",
                sendsFileRegions: true)
            try HTTP1TestPipeline.add(to: channel.pipeline.syncOperations, socket: nil, client: handler)
            return HTTP1Connection(
                id: 1, key: PoolKey(request: try HTTP1TestPipeline.request()), channel: channel,
                handler: NIOLoopBound(handler, eventLoop: loop))
        }
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 80))
        let pool = HTTP1TestPipeline.makePool(group: loop)
        let consumer = RecordingConsumer()
        let request = try HTTP1TestPipeline.request("PUT", body: .stream(length: Int64(length), source: source))
        let exchange = TransportExchange(request: request, consumer: consumer, pool: pool)
        #expect(exchange.attach(connection))
        connection.execute(exchange, isReused: false)
        return (channel, consumer, pool)
    }

    /// The checks before each region: the file must hold the region, and at the last region no more than the
    /// announced length; the failures read as the chunked reads' do.
    @Test func aRegionIsPreparedOnlyWhileTheFileHoldsItAndNoMore() throws {
        let file = try TemporaryFile(length: 100)
        defer { file.remove() }
        let descriptor = open(file.path, O_RDONLY | O_CLOEXEC)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        func outcome(_ range: Range<Int64>, of length: Int64) -> String {
            switch FileRegionPreparation.prepare(
                descriptor: descriptor, start: range.lowerBound, end: range.upperBound, length: length)
            {
            case .ready: return "ready"
            case .unsupported: return "unsupported"
            case .failed(let error): return error.detail
            }
        }
        #expect(outcome(0..<50, of: 100) == "ready")
        #expect(outcome(50..<100, of: 100) == "ready")
        // More than announced, but not at the last region: the last region's check decides.
        #expect(outcome(0..<50, of: 80) == "ready")
        #expect(
            outcome(50..<80, of: 80)
                == "the request body stream is longer than the 80 bytes its Content-Length declares")
        #expect(
            outcome(100..<120, of: 120)
                == "the request body stream ended after 100 of the 120 bytes its Content-Length declares")
    }
}

/// A file of `length` bytes in the temporary directory.
private struct TemporaryFile {
    let path: String

    init(length: Int) throws {
        path = NSTemporaryDirectory() + "courier-region-\(UUID().uuidString)"
        let bytes = Data((0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try bytes.write(to: URL(fileURLWithPath: path))
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// A file source whose reader offers its file for `sendfile(2)`, and counts reads of chunks: by default it serves
/// none (a read ends the body at once, and is never expected); with `servesChunks`, it serves the file. The
/// descriptor offered for the regions is the file's, or one opened on `regionPath`.
private struct RegionFileSource: TransportBodySource {
    let path: String
    let regionPath: String?
    let servesChunks: Bool
    let closed: AsyncStream<Void>
    let chunkReads = NIOLockedValueBox(0)
    fileprivate let onClose: AsyncStream<Void>.Continuation

    init(path: String, regionPath: String? = nil, servesChunks: Bool = false) {
        self.path = path
        self.regionPath = regionPath
        self.servesChunks = servesChunks
        (closed, onClose) = AsyncStream.makeStream()
    }

    func makeReader() async throws -> any TransportBodyReader {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw TransferError.cannotOpenFile("cannot open \(path)") }
        return Reader(descriptor: descriptor, source: self)
    }

    private final class Reader: FileRegionBodyReader {
        private let descriptor: Int32
        private let source: RegionFileSource

        init(descriptor: Int32, source: RegionFileSource) {
            self.descriptor = descriptor
            self.source = source
        }

        func read(maxLength: Int) async throws -> ByteBuffer? {
            source.chunkReads.withLockedValue { $0 += 1 }
            guard source.servesChunks else { return nil }
            var buffer = ByteBuffer()
            let count = try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: maxLength) { bytes in
                let count = Glibc.read(descriptor, bytes.baseAddress, min(maxLength, bytes.count))
                guard count >= 0 else { throw TransferError.cannotOpenFile("cannot read \(source.path)") }
                return count
            }
            return count > 0 ? buffer : nil
        }

        func makeRegionDescriptor() -> Int32? {
            let duplicate =
                source.regionPath.map { open($0, O_RDONLY | O_CLOEXEC) } ?? fcntl(descriptor, F_DUPFD_CLOEXEC, 0)
            return duplicate >= 0 ? duplicate : nil
        }

        func close() {
            closeDescriptor(descriptor)
            source.onClose.yield()
        }

        private func closeDescriptor(_ descriptor: Int32) {
            #if canImport(Glibc)
                _ = Glibc.close(descriptor)
            #elseif canImport(Darwin)
                _ = Darwin.close(descriptor)
            #endif
        }
    }
}

/// How many of this process's descriptors are open on `path`.
private func openDescriptors(on path: String) -> Int {
    let target = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
    let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return descriptors.filter {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")) == target
    }.count
}

/// The size `stat(2)` gives the directory at `path`; 0 when it gives none (or fails).
private func directorySize(_ path: String) -> Int {
    var status = stat()
    return stat(path, &status) == 0 ? Int(status.st_size) : 0
}
