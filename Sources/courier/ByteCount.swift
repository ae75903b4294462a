import Foundation

/// Byte counts as people read and write them: `12.3 MiB` in the progress line, `100K` or `1.5M` in `--limit-rate`.
enum ByteCount {
    /// A short human form: `512 B`, `1.0 KiB`, `12.3 MiB`, `4.0 GiB` (binary units, as curl's).
    static func format(_ bytes: Int64) -> String {
        let units = ["KiB", "MiB", "GiB", "TiB"]
        guard bytes >= 1024 else { return "\(max(bytes, 0)) B" }
        var value = Double(bytes) / 1024
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return String(format: "%.1f", value) + " " + units[unit]
    }

    /// A rate: `format(bytes)` per second.
    static func formatRate(_ bytesPerSecond: Double) -> String {
        format(Int64(bytesPerSecond.isFinite ? max(bytesPerSecond, 0) : 0)) + "/s"
    }

    /// Parses `500`, `100K`, `1.5M`, `2G` (optionally with `B` and `/s`: `100KB/s`); K is 1024 as in curl. `nil` for
    /// anything else, zero, or a negative number.
    static func parse(_ text: String) -> Int64? {
        guard let bytes = parseAllowingZero(text), bytes > 0 else { return nil }
        return bytes
    }

    /// As ``parse(_:)``, but zero (`0`, `0K`, `0.0M/s`) is read as 0 rather than refused: `--limit-rate 0` means no
    /// limit, as for curl, which hands the rate to libcurl's `CURLOPT_MAX_RECV_SPEED_LARGE` (0: disabled).
    static func parseAllowingZero(_ text: String) -> Int64? {
        var rest = text.trimmingCharacters(in: .whitespaces).lowercased()
        if rest.hasSuffix("/s") { rest.removeLast(2) }
        if rest.hasSuffix("b") { rest.removeLast() }
        var multiplier: Double = 1
        if let last = rest.last, let power = ["k": 1, "m": 2, "g": 3][String(last)] {
            multiplier = pow(1024, Double(power))
            rest.removeLast()
        }
        guard !rest.isEmpty, rest.allSatisfy({ $0.isNumber || $0 == "." }), let number = Double(rest),
            number >= 0, number * multiplier < Double(Int64.max)
        else { return nil }
        return number == 0 ? 0 : max(1, Int64(number * multiplier))
    }

    /// A duration as `m:ss` or `h:mm:ss`.
    static func formatDuration(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0, seconds < 100 * 3600 else { return "--:--" }
        let whole = Int(seconds.rounded())
        let (hours, minutes, secs) = (whole / 3600, (whole % 3600) / 60, whole % 60)
        return hours > 0
            ? String(format: "%d:%02d:%02d", hours, minutes, secs) : String(format: "%d:%02d", minutes, secs)
    }
}
