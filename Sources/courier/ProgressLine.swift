/// One transfer's line in the progress display, as a pure function of what is known and the terminal's width.
///
/// With a known length: `name  42% [=====>      ] 12.3 MiB/29.1 MiB 3.2 MiB/s ETA 0:05`; without one, a spinner
/// with the bytes so far and the rate. When the width is short, the bar goes first, then the ETA, the total and
/// the rate, and the name is shortened last; the line never reaches the last column (a terminal would wrap it).
struct ProgressLine {
    enum Phase: Equatable {
        case running
        case finished
        case failed
    }

    var name: String
    var received: Int64
    /// The complete length, when the server said it.
    var total: Int64?
    /// Bytes per second, recent.
    var rate: Double
    var phase: Phase = .running
    /// Advances the spinner of a transfer of unknown length.
    var tick: Int = 0

    private static let spinner: [Character] = ["|", "/", "-", "\\"]

    /// The line for a terminal `width` columns wide: at most `width - 1` characters.
    func render(width: Int) -> String {
        let room = max(width - 1, 8)
        var fields: [String] = []
        let percent: String?
        if let total, total > 0 {
            let value = min(100, Int(Double(received) * 100 / Double(total)))
            percent = String(repeating: " ", count: max(0, 3 - String(value).count)) + "\(value)%"
        } else {
            percent = nil
        }
        let sizes =
            total.map { "\(ByteCount.format(received))/\(ByteCount.format($0))" } ?? ByteCount.format(received)
        let rateText = ByteCount.formatRate(rate)
        let tail: String? =
            switch phase {
            case .failed: "failed"
            case .finished: "done"
            case .running:
                if let total, rate > 0, total > received {
                    "ETA \(ByteCount.formatDuration(Double(total - received) / rate))"
                } else {
                    nil
                }
            }
        // Fields from the most to the least important; the least go first when the line is short.
        var optional: [String?] = [sizes, rateText, tail]
        let status = percent ?? (phase == .running ? String(Self.spinner[tick % Self.spinner.count]) : nil)
        func assemble(bar: Int?) -> String {
            fields = []
            if let status { fields.append(status) }
            if let bar, let total, total > 0 {
                let filled = min(bar, Int(Double(bar) * Double(received) / Double(total)))
                let arrow = filled < bar && filled > 0 ? ">" : ""
                let body = String(repeating: "=", count: max(0, filled - arrow.count)) + arrow
                fields.append("[" + body + String(repeating: " ", count: bar - body.count) + "]")
            }
            fields += optional.compactMap { $0 }
            return fields.joined(separator: " ")
        }
        var name = self.name
        let minimumName = min(name.count, 12)
        // A bar of 10 to 30 columns when there is room for it and the name.
        let plain = assemble(bar: nil)
        let barRoom = room - name.count - 1 - plain.count - 3
        if total != nil, barRoom >= 10 {
            return name + " " + assemble(bar: min(barRoom, 30))
        }
        var stats = plain
        while name.count + 1 + stats.count > room, optional.contains(where: { $0 != nil }),
            minimumName + 1 + stats.count > room
        {
            // Drop the least important field left: the tail (ETA), then the rate, then the sizes.
            if let index = optional.lastIndex(where: { $0 != nil }) { optional[index] = nil }
            stats = assemble(bar: nil)
        }
        if name.count + 1 + stats.count > room {
            let keep = max(1, room - 1 - stats.count - 1)
            name = keep < name.count ? String(name.prefix(keep)) + "~" : name
        }
        let line = stats.isEmpty ? name : name + " " + stats
        return String(line.prefix(room))
    }
}

/// The recent rate of a transfer: bytes over the last few seconds.
struct RateMeter {
    private var samples: [(time: Double, bytes: Int64)] = []
    private let window: Double

    init(window: Double = 3) {
        self.window = window
    }

    mutating func record(total bytes: Int64, at now: Double) {
        samples.append((now, bytes))
        while let first = samples.first, now - first.time > window, samples.count > 2 {
            samples.removeFirst()
        }
    }

    /// Bytes per second between the oldest and the newest sample in the window; 0 before two samples.
    var rate: Double {
        guard let first = samples.first, let last = samples.last, last.time - first.time > 0.05 else { return 0 }
        return Double(last.bytes - first.bytes) / (last.time - first.time)
    }
}
