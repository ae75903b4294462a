import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Standard error as a terminal: whether it is one, how wide it is, and writing to it without Foundation's
/// buffering (the progress display and messages must interleave in order).
enum Terminal {
    /// Whether standard error is a terminal (progress is drawn only then).
    static var standardErrorIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }

    /// The width of the terminal on standard error, read each time (the window may be resized): the terminal's
    /// own, else `COLUMNS`, else 80.
    static var width: Int {
        var size = winsize()
        if ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 {
            return Int(size.ws_col)
        }
        if let columns = ProcessInfo.processInfo.environment["COLUMNS"].flatMap(Int.init), columns > 0 {
            return columns
        }
        return 80
    }

    /// `text` made safe to show on a terminal: every control character (C0 but the line feed where
    /// `keepingLineFeeds`, DEL, and the C1 range U+0080–U+009F, which terminals also obey) is shown as `\xHH`
    /// instead of being written. What the tool prints holds text that others chose — a URL's percent-decoded last
    /// component (`%1B`), a header value or a certificate's name in `-v` — and, written raw, an escape sequence
    /// in it would move the cursor, clear the screen or retitle the window.
    static func printable(_ text: String, keepingLineFeeds: Bool = false) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            let value = scalar.value
            let isControl = value < 0x20 || (0x7F...0x9F).contains(value)
            if isControl && !(keepingLineFeeds && scalar == "\n") {
                let hex = String(value, radix: 16, uppercase: true)
                result += "\\x" + (hex.count < 2 ? "0" + hex : hex)
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// Writes `text` to standard error in full.
    static func writeError(_ text: String) {
        write(Array(text.utf8), to: STDERR_FILENO)
    }

    /// Writes `text` to standard output in full.
    static func writeOutput(_ text: String) {
        write(Array(text.utf8), to: STDOUT_FILENO)
    }

    private static func write(_ bytes: [UInt8], to descriptor: Int32) {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                #if canImport(Glibc)
                    let written = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                #else
                    let written = Darwin.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                #endif
                if written > 0 {
                    offset += written
                } else if written < 0 && errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
    }
}
