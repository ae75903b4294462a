import CourierHTTP
import Testing

@Suite("ResponseHeadSyntax")
struct ResponseHeadSyntaxTests {
    /// Which reads take the no-copy path: a whole, strict, final head at their start.
    @Test(arguments: [
        ("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbody", true),
        ("HTTP/1.1 204 No Content\r\n\r\n", true),
        ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n", true),
        ("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n", false),  // the head goes on in the next read
        ("HTTP/1.1 200 OK\nA: b\r\n\r\n", false),
        ("HTTP/1.1 200 OK\r\nA: b\n\r\n", false),
        ("\r\nHTTP/1.1 200 OK\r\n\r\n", false),
        ("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n", false),
        ("HTTP/1.1 200 OK\r\nContent-Length: 4\r\nContent-Length: 4\r\n\r\n", false),
        ("HTTP/1.1 200 OK\r\nContent-Length: 4, 4\r\n\r\n", false),
        ("HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", false),
        ("HTTP/1.1 200 OK\r\nA: \rb\r\n\r\n", false),
        ("HTTP/1.1 200 OK\r\nA: b\r\n c\r\n\r\n", false),  // an obs-fold, to unfold
        ("HTTP/1.1 200 OK\r\nA: b\r\n\tc\r\n\r\n", false),
        ("HTTP/1.1 200 OK\r\nA: " + String(repeating: "b", count: 1 << 20) + "\r\n\r\n", false),  // too long
        ("garbage\r\n\r\n", false),
        ("HTTP/1.1 200 O\rK\r\n\r\n", false),  // a CR inside the status line
        ("HTTP/1.1 200 OK\r\n\n", false),  // a blank line of a bare LF
        ("HTTP/1.1 200 OK\r\nA: b\r", false),  // the read ends between CR and LF
        ("", false),
    ])
    func strictFinalHeads(input: String, strict: Bool) {
        #expect(Array(input.utf8).withUnsafeBytes(ResponseHeadSyntax.startsWithStrictFinalHead) == strict)
    }

    @Test(arguments: [
        ("HTTP/1.1 200 OK", true), ("HTTP/1.0 404", true), ("HTTP/1.1 200OK", false), ("HTTP/1.1 20 OK", false),
        ("HTTP/1.1 2000 OK", false), ("HTTP/1 200 OK", false), ("garbage", false),
    ])
    func statusLines(line: String, valid: Bool) {
        #expect(ResponseHeadSyntax.isStatusLine(Array(line.utf8)) == valid)
    }

    @Test func identicalLengthsFoldAndDifferentOnesAreRefused() throws {
        let lines = ["HTTP/1.1 200 OK", "Content-Length: 005", "content-length: 5, 5"].map { ArraySlice($0.utf8) }
        #expect(try ResponseHeadSyntax.rewrite(lines) == Array("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n".utf8))
        let conflicting = ["HTTP/1.1 200 OK", "Content-Length: 4", "Content-Length: 5"].map { ArraySlice($0.utf8) }
        #expect(throws: TransferError.self) { try ResponseHeadSyntax.rewrite(conflicting) }
    }

    @Test func foldedLinesAreJoinedWithOneSpace() throws {
        let lines = ["HTTP/1.1 200 OK", "A: one  ", " \t two", "\tthree", "B: x", "   "].map { ArraySlice($0.utf8) }
        #expect(
            try ResponseHeadSyntax.rewrite(lines) == Array("HTTP/1.1 200 OK\r\nA: one two three\r\nB: x\r\n\r\n".utf8))
        let afterStatus = ["HTTP/1.1 200 OK", " folded", "A: b"].map { ArraySlice($0.utf8) }
        #expect(throws: TransferError.self) { try ResponseHeadSyntax.rewrite(afterStatus) }
    }

    /// A long field folded over 100,000 more lines. Each continuation was joined to a copy of the field so far:
    /// time quadratic in the field's length, here some 3 * 10^12 bytes copied (well over a minute of the event
    /// loop the head is read on; the codec's 1 MiB limit on a head still allowed seconds). Not a speed check: joined
    /// in one buffer it takes a fraction of a second in a debug build, and the bound sits far below the quadratic
    /// time, so only the quadratic algorithm can fail it, however loaded the machine.
    @Test func aLongFoldedFieldIsJoinedInLinearTime() throws {
        let start = "X: " + String(repeating: "a", count: 32 << 20)
        let count = 100_000
        var lines = [ArraySlice("HTTP/1.1 200 OK".utf8), ArraySlice(start.utf8)]
        lines += Array(repeating: ArraySlice(" b".utf8), count: count)
        let clock = ContinuousClock()
        var rewritten: [UInt8] = []
        let elapsed = try clock.measure { rewritten = try ResponseHeadSyntax.rewrite(lines) }
        #expect(elapsed < .seconds(20), "unfolding took \(elapsed)")
        let expected = Array("HTTP/1.1 200 OK\r\n\(start)\(String(repeating: " b", count: count))\r\n\r\n".utf8)
        // Compared as a whole, but reported by length: a failure would otherwise print megabytes.
        let same = rewritten == expected
        #expect(same, "the unfolded head (\(rewritten.count) bytes) differs from the joined field (\(expected.count))")
    }
}
