import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

/// Bytes as an async sequence, one at a time, for the decoders under test.
private struct Bytes: AsyncSequence, Sendable {
    typealias Element = UInt8
    let bytes: [UInt8]

    struct AsyncIterator: AsyncIteratorProtocol {
        var index = 0
        let bytes: [UInt8]
        mutating func next() async throws -> UInt8? {
            guard index < bytes.count else { return nil }
            defer { index += 1 }
            return bytes[index]
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(bytes: bytes) }
}

/// `AsyncBytes.unicodeScalars` and `.characters`: decoded as `String(decoding:as:)` decodes the same bytes.
@Suite("Async scalars and characters")
struct AsyncTextSequenceTests {
    static let inputs: [[UInt8]] = [
        Array("plain ASCII".utf8),
        Array("é 中 🇫🇷🇩🇪 👩‍👩‍👧 e\u{301} \r\n".utf8),
        [],
        [0x80],  // a lone continuation byte
        [0xC0, 0xAF],  // overlong
        [0xE0, 0x80, 0xAF],  // overlong, three bytes
        [0xED, 0xA0, 0x80],  // a surrogate
        [0xF4, 0x90, 0x80, 0x80],  // above U+10FFFF
        [0xF5, 0x41],  // a byte that starts nothing, then ASCII
        [0xE2, 0x82],  // truncated at the end
        [0xE2, 0x41, 0xE2, 0x82, 0xAC],  // truncated, then valid
        [0xF0, 0x9F, 0x98, 0x80, 0xFF, 0xC3, 0xA9],
        [0x61, 0xCC, 0x81, 0xCC, 0x81],  // combining marks piling onto one character
    ]

    @Test(arguments: inputs)
    func scalarsMatchStringDecoding(bytes: [UInt8]) async throws {
        var scalars: [Unicode.Scalar] = []
        for try await scalar in AsyncUnicodeScalarSequence(base: Bytes(bytes: bytes)) { scalars.append(scalar) }
        #expect(scalars == Array(String(decoding: bytes, as: UTF8.self).unicodeScalars))
    }

    @Test(arguments: inputs)
    func charactersMatchStringDecoding(bytes: [UInt8]) async throws {
        var characters: [Character] = []
        for try await character in AsyncCharacterSequence(base: Bytes(bytes: bytes)) { characters.append(character) }
        #expect(characters == Array(String(decoding: bytes, as: UTF8.self)))
    }

    /// `lines` splits as Darwin's `AsyncLineSequence` (the implementation Apple contributed to
    /// swift-corelibs-foundation): every Unicode line break ends a line, and empty lines are skipped, so code that
    /// decodes each line (NDJSON, `data:` lines) sees the same lines on both.
    @Test(
        arguments: [
            ("a\n\nb\n", ["a", "b"]),
            ("\r\n\r\na\r\n\r\nb", ["a", "b"]),
            ("a\rb\r\rc\r", ["a", "b", "c"]),
            ("\n\n\n", []),
            ("", []),
            ("a\u{0B}b\u{0C}c", ["a", "b", "c"]),
            ("a\u{85}b\u{2028}c\u{2029}d", ["a", "b", "c", "d"]),
            ("© … é\n中", ["© … é", "中"]),
        ] as [(String, [String])])
    func linesSplitAsDarwinsDo(text: String, lines: [String]) async throws {
        var found: [String] = []
        for try await line in AsyncLineSequence(base: Bytes(bytes: Array(text.utf8))) { found.append(line) }
        #expect(found == lines)
    }

    @Test func randomBytesDecodeAsStringDoes() async throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let bytes = (0..<Int.random(in: 0...24, using: &generator)).map { _ in
                // Mostly the interesting high bytes.
                UInt8.random(in: 0x60...0xFF, using: &generator)
            }
            var scalars: [Unicode.Scalar] = []
            for try await scalar in AsyncUnicodeScalarSequence(base: Bytes(bytes: bytes)) { scalars.append(scalar) }
            #expect(scalars == Array(String(decoding: bytes, as: UTF8.self).unicodeScalars), "\(bytes)")
        }
    }

    @Test func aBodysCharactersSurviveChunksThatSplitThem() async throws {
        try await withServer { server in
            let text = String(repeating: "é中🇫🇷👩‍👩‍👧e\u{301}\r\n", count: 300)
            var chunked = MockResponse.ok(text)
            chunked.chunked = true
            chunked.chunkSize = 7  // splits most multi-byte scalars and clusters
            server.route("/characters", response: chunked)
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }

            let (bytes, _) = try await session.bytes(from: server.url("/characters"))
            var characters = ""
            for try await character in bytes.characters { characters.append(character) }
            #expect(characters == text)
            #expect(characters.count == text.count)

            let (again, _) = try await session.bytes(from: server.url("/characters"))
            var scalars = String.UnicodeScalarView()
            for try await scalar in again.unicodeScalars { scalars.append(scalar) }
            #expect(String(scalars) == text)
        }
    }
}
