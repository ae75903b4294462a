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
