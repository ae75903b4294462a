import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Runs the tool with its standard error on a pseudo-terminal `columns` wide and returns what the screen shows and
/// every line drawn on the way. `interrupt` sends SIGINT once `interruptWhen` holds for the screen so far.
private func runInTerminal(
    _ arguments: [String], columns: UInt16
) async throws -> (status: Int32, screen: ScreenEmulator, stdout: Data) {
    let terminal = try PseudoTerminal(columns: columns)
    let child = try ChildProcess(
        courierBinary().path, arguments, standardOutput: .pipe, standardError: .descriptor(terminal.terminal))
    terminal.closeTerminalSide()
    async let drawn = terminal.readAll()
    let stdout = await onOwnThread { child.standardOutput?.readDataToEndOfFile() ?? Data() }
    let status = await child.exitStatus()
    var screen = ScreenEmulator(width: Int(columns))
    screen.feed(await drawn)
    return (status, screen, stdout)
}

/// A body of `length` pattern bytes sent in 8 KiB parts 25 ms apart (`chunked` hides its length).
private func trickle(length: Int64, chunked: Bool = false) -> MockResponse {
    var response = MockResponse(body: .pattern(length: length))
    response.chunkSize = 8192
    response.chunkDelay = .milliseconds(25)
    response.chunked = chunked
    return response
}

extension CLISuites {
    /// The progress display, read from a pseudo-terminal the way a person would see it.
    @Suite("courier get: progress on a terminal")
    struct CLIProgressTests {
        /// 40 columns: nothing is ever written in the last column, the percent grows, and the final line says 100%.
        @Test func aNarrowTerminalGetsOneLineThatNeverWraps() async throws {
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try await withServer { server in
                server.route("/file", response: trickle(length: 400_000))
                let out = directory.appendingPathComponent("a-rather-long-file-name-for-the-screen.bin")
                let result = try await runInTerminal(
                    ["get", server.url("/file").absoluteString, "-o", out.path], columns: 40)
                #expect(result.status == 0)
                #expect(try fileHoldsPattern(out, length: 400_000))
                let screen = result.screen
                #expect(screen.overflows == 0)
                #expect(screen.unknownSequences.isEmpty)
                #expect(screen.seenLines.allSatisfy { $0.count <= 39 })
                let percents = screen.seenLines.compactMap { line -> Int? in
                    guard let sign = line.firstIndex(of: "%") else { return nil }
                    return Int(line[..<sign].split(separator: " ").last ?? "")
                }
                #expect(percents.contains { $0 > 0 && $0 < 100 }, "\(screen.seenLines)")
                #expect(percents == percents.sorted())
                // The end: one finished line, and the cursor on a fresh line below it.
                let visible = screen.screen.filter { !$0.isEmpty }
                #expect(visible.count == 1, "\(screen.screen)")
                #expect(visible.first?.contains("100%") == true)
                #expect(visible.first?.hasPrefix("a-rather") == true)
                #expect(screen.screen.last == "")
            }
        }

        /// Without a length: a spinner with the bytes so far, then the total at the end.
        @Test func anUnknownLengthShowsBytesAndASpinner() async throws {
            try await withServer { server in
                server.route("/stream", response: trickle(length: 200_000, chunked: true))
                let result = try await runInTerminal(
                    ["get", server.url("/stream").absoluteString, "-o", "/dev/null"], columns: 80)
                #expect(result.status == 0)
                let spinning = result.screen.seenLines.filter { line in
                    ["|", "/", "-", "\\"].contains { line.contains(" \($0) ") } && line.contains("KiB/s")
                        && !line.contains("%")
                }
                #expect(spinning.count >= 2, "\(result.screen.seenLines)")
                #expect(result.screen.screen.first { !$0.isEmpty }?.contains("done") == true)
            }
        }

        /// Several transfers at once: a line each while they run, every one finished at the end, and the body
        /// bytes only on standard output.
        @Test func parallelTransfersGetALineEach() async throws {
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try await withServer { server in
                server.route("/one", response: trickle(length: 300_000))
                server.route("/two", response: trickle(length: 200_000))
                let result = try await runInTerminal(
                    [
                        "get", "-Z", "-o", directory.appendingPathComponent("one.bin").path, "-o",
                        directory.appendingPathComponent("two.bin").path, server.url("/one").absoluteString,
                        server.url("/two").absoluteString,
                    ], columns: 80)
                #expect(result.status == 0)
                #expect(result.stdout.isEmpty)
                let screen = result.screen.screen.filter { !$0.isEmpty }
                #expect(screen.contains { $0.hasPrefix("one.bin") && $0.contains("100%") }, "\(screen)")
                #expect(screen.contains { $0.hasPrefix("two.bin") && $0.contains("100%") }, "\(screen)")
                #expect(screen.contains { $0.contains("2 transfers, 2 succeeded, 0 failed") })
                #expect(result.screen.overflows == 0)
            }
        }

        /// Ctrl-C: the line is finished where it stood, the message comes on the next line, nothing is left.
        @Test func anInterruptionLeavesATidyScreen() async throws {
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try await withServer { server in
                var slow = MockResponse(body: .pattern(length: 2_000_000))
                slow.chunkSize = 4096
                slow.chunkDelay = .milliseconds(20)
                server.route("/slow", response: slow)
                let terminal = try PseudoTerminal(columns: 50)
                let child = try ChildProcess(
                    courierBinary().path,
                    ["get", server.url("/slow").absoluteString, "-o", directory.appendingPathComponent("x.bin").path],
                    standardError: .descriptor(terminal.terminal))
                terminal.closeTerminalSide()
                async let drawn = terminal.readAll()
                for _ in 0..<200 where server.requests(path: "/slow").isEmpty {
                    try await Task.sleep(for: .milliseconds(20))
                }
                // Long enough for a few redraws.
                try await Task.sleep(for: .milliseconds(600))
                child.send(SIGINT)
                #expect(await child.exitStatus() == 130)
                var screen = ScreenEmulator(width: 50)
                screen.feed(await drawn)
                let visible = screen.screen.filter { !$0.isEmpty }
                #expect(visible.count == 2, "\(screen.screen)")
                #expect(visible.first?.hasPrefix("x.bin") == true)
                #expect(visible.last == "courier: interrupted")
                #expect(screen.overflows == 0)
                #expect(filesIn(directory).isEmpty)
            }
        }

        /// A URL is text someone else wrote: its last component, percent-decoded for the progress line and the
        /// `-v` log, may hold escape sequences (`%1B]0;…%07` retitles the window, `%1B[31m` colours the screen).
        /// They are shown as `\x1B`, never sent to the terminal.
        @Test func escapeSequencesInAURLAreShownNotObeyed() async throws {
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try await withServer { server in
                let path = "/dl%1B%5D0%3Bpwned%07%1B%5B31mred"
                server.route(path, response: trickle(length: 100_000))
                let result = try await runInTerminal(
                    ["get", "-v", "-O", "--output-dir", directory.path, server.url(path).absoluteString],
                    columns: 100)
                #expect(result.status == 0)
                #expect(result.screen.unknownSequences.isEmpty, "\(result.screen.unknownSequences)")
                let lines = result.screen.seenLines
                #expect(!lines.contains { $0.unicodeScalars.contains { $0.value == 0x07 } })
                #expect(lines.contains { $0.hasPrefix("dl\\x1B]0;pwned\\x07\\x1B[31mred") }, "\(lines)")
                // The file's name keeps no control character either.
                #expect(filesIn(directory) == ["dl]0;pwned[31mred"])
            }
        }

        /// A message is written in full however narrow the terminal (which wraps it): cut to the width, the error
        /// of a long URL lost its reason.
        @Test func aMessageIsNotCutToTheWidth() async throws {
            let url = "http://127.0.0.1:1/a/rather/long/path/for/a/narrow/terminal.iso"
            let result = try await runInTerminal(["get", url], columns: 40)
            #expect(result.status == 7)
            let message = result.screen.seenLines.first { $0.hasPrefix("courier: ") }
            #expect(message?.contains(url) == true, "\(result.screen.seenLines)")
            #expect(message?.contains("(URLError ") == true, "\(result.screen.seenLines)")
        }

        /// `-s` draws nothing, and the body still arrives.
        @Test func silentDrawsNothing() async throws {
            try await withServer { server in
                server.route("/file", response: trickle(length: 50_000))
                let result = try await runInTerminal(["get", "-s", server.url("/file").absoluteString], columns: 80)
                #expect(result.status == 0)
                #expect(result.stdout.count == 50_000)
                #expect(result.screen.seenLines.isEmpty)
                // With -S an error still shows.
                let failed = try await runInTerminal(["get", "-sS", "http://127.0.0.1:1/"], columns: 80)
                #expect(failed.status == 7)
                #expect(failed.screen.seenLines.contains { $0.hasPrefix("courier:") })
            }
        }
    }
}
