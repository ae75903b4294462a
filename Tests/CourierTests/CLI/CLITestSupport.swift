import CourierTestSupport
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The built `courier` executable (it sits next to the test bundle).
func courierBinary() -> URL {
    let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    let binary = directory.appendingPathComponent("courier")
    if FileManager.default.fileExists(atPath: binary.path) { return binary }
    // Swift Testing may run from inside the .xctest bundle directory.
    return directory.deletingLastPathComponent().appendingPathComponent("courier")
}

/// Runs the built `courier` executable and captures its output. The blocking reads and the wait run on threads of
/// their own (``onOwnThread(_:)``), never on the threads every other test needs.
func runCourier(_ arguments: [String], environment: [String: String]? = nil) async throws -> (
    status: Int32, stdout: Data, stderr: String
) {
    let child = try ChildProcess(
        courierBinary().path, arguments, environment: environment, standardOutput: .pipe, standardError: .pipe)
    // Each pipe on its own thread, so that neither fills while the other is read.
    async let stderr = onOwnThread { child.standardError?.readDataToEndOfFile() ?? Data() }
    let stdout = await onOwnThread { child.standardOutput?.readDataToEndOfFile() ?? Data() }
    let status = await child.exitStatus()
    return (status, stdout, String(decoding: await stderr, as: UTF8.self))
}

/// A pseudo-terminal for running the tool as if a person watched: the tool's standard error is the terminal
/// (`isatty` is true, the window has the size given) and the test reads everything drawn on it.
final class PseudoTerminal: Sendable {
    /// The side the test reads.
    let controller: Int32
    /// The side the child writes to (its standard error); closed in the test process once the child runs.
    let terminal: Int32

    init(columns: UInt16, rows: UInt16 = 24) throws {
        // glibc's pseudo-terminal functions, which Swift's Glibc module leaves out (they need _XOPEN_SOURCE).
        typealias Open = @convention(c) (Int32) -> Int32
        typealias Setup = @convention(c) (Int32) -> Int32
        typealias Name = @convention(c) (Int32, UnsafeMutablePointer<CChar>, Int) -> Int32
        func symbol<T>(_ name: String, as type: T.Type) throws -> T {
            guard let pointer = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { throw POSIXError(.ENOSYS) }
            return unsafeBitCast(pointer, to: type)
        }
        // Both sides close-on-exec: a child another test starts meanwhile must not hold the terminal side open (the
        // reader here would see no end until that child exited); the tool's copy is made by dup2, which clears it.
        controller = try symbol("posix_openpt", as: Open.self)(O_RDWR | O_NOCTTY | O_CLOEXEC)
        var name = [CChar](repeating: 0, count: 128)
        guard controller >= 0, try symbol("grantpt", as: Setup.self)(controller) == 0,
            try symbol("unlockpt", as: Setup.self)(controller) == 0,
            try symbol("ptsname_r", as: Name.self)(controller, &name, name.count) == 0
        else { throw POSIXError(.EIO) }
        terminal = open(
            String(decoding: name.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self),
            O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard terminal >= 0 else { throw POSIXError(.EIO) }
        var size = winsize(ws_row: rows, ws_col: columns, ws_xpixel: 0, ws_ypixel: 0)
        _ = ioctl(controller, UInt(TIOCSWINSZ), &size)
    }

    /// Everything the child draws until it exits and the terminal closes, read on a dispatch thread.
    func readAll() async -> [UInt8] {
        await onOwnThread {
            var bytes: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = read(self.controller, &buffer, buffer.count)
                if count > 0 {
                    bytes += buffer[0..<count]
                } else if count < 0 && errno == EINTR {
                    continue
                } else {
                    break  // EIO: every terminal-side descriptor is closed
                }
            }
            return bytes
        }
    }

    func closeTerminalSide() {
        close(terminal)
    }

    deinit {
        close(controller)
    }
}

/// The few terminal controls the progress display uses, applied to a grid of lines: printable characters,
/// carriage return, line feed, `ESC [ n A` (up), `ESC [ K` (erase to the end of the line), `ESC [ J` (erase to the
/// end of the screen). Records every line as it was when the cursor left it, and whether anything was ever
/// written in the last column or beyond (a terminal would wrap it).
struct ScreenEmulator {
    let width: Int
    private(set) var lines: [[Character]] = [[]]
    private(set) var row = 0
    private(set) var column = 0
    /// Characters written at or past the last column.
    private(set) var overflows = 0
    /// Every line's text each time the cursor left it or went back to its start.
    private(set) var seenLines: [String] = []
    /// Control sequences it does not know.
    private(set) var unknownSequences: [String] = []

    init(width: Int) {
        self.width = width
    }

    var screen: [String] { lines.map { String($0).trimmingCharacters(in: .whitespaces) } }

    mutating func feed(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        var scalars = text.unicodeScalars[...]
        while let scalar = scalars.popFirst() {
            switch scalar {
            case "\r":
                record()
                column = 0
            case "\n":
                record()
                row += 1
                if row == lines.count { lines.append([]) }
            case "\u{1B}":
                guard scalars.first == "[" else {
                    unknownSequences.append("ESC")
                    continue
                }
                scalars.removeFirst()
                var parameter = ""
                while let next = scalars.first, next.properties.numericType != nil || next == "?" || next == ";" {
                    parameter.unicodeScalars.append(next)
                    scalars.removeFirst()
                }
                guard let command = scalars.popFirst() else { return }
                switch command {
                case "A":
                    record()
                    row = max(0, row - (Int(parameter) ?? 1))
                case "K":
                    if column < lines[row].count { lines[row].removeSubrange(column...) }
                case "J":
                    if column < lines[row].count { lines[row].removeSubrange(column...) }
                    lines.removeSubrange((row + 1)...)
                default:
                    unknownSequences.append("[\(parameter)\(command)")
                }
            default:
                if column >= width - 1 { overflows += 1 }
                while lines[row].count < column { lines[row].append(" ") }
                let character = Character(scalar)
                if column < lines[row].count {
                    lines[row][column] = character
                } else {
                    lines[row].append(character)
                }
                column += 1
            }
        }
        record()
    }

    private mutating func record() {
        let text = String(lines[row]).trimmingCharacters(in: .whitespaces)
        if !text.isEmpty, seenLines.last != text { seenLines.append(text) }
    }
}
