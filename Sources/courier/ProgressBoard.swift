import Dispatch
import Foundation
import NIOConcurrencyHelpers

/// The progress display on standard error: one line per running transfer, redrawn at most ten times a second.
///
/// Running transfers form a block at the bottom that is redrawn in place (carriage return, cursor up, erase
/// line); a transfer that ends leaves its final line above the block, and messages (errors) go there too, so the
/// screen reads top to bottom like a log. When the display is off (standard error is not a terminal, or `-s`),
/// nothing is drawn and messages are written as plain lines.
/// `@unchecked Sendable`: the state is behind a lock; the timer is set once in `init` and only cancelled after
/// (a dispatch source is thread-safe).
final class ProgressBoard: @unchecked Sendable {
    private struct Entry {
        var line: ProgressLine
        var meter = RateMeter()
    }

    private struct State {
        var entries: [Int: Entry] = [:]
        /// Running transfers in the order they started.
        var order: [Int] = []
        /// Final lines and messages not yet written above the block.
        var pending: [String] = []
        var nextIdentifier = 0
        /// Lines of the block now on the screen; with 0 the cursor is at the start of an empty line.
        var drawnLines = 0
        var dirty = false
        var stopped = false
        var tick = 0
    }

    /// Whether lines are drawn at all.
    let isEnabled: Bool
    private let state = NIOLockedValueBox(State())
    private let timer: (any DispatchSourceTimer)?
    private let clock: @Sendable () -> Double

    init(enabled: Bool, clock: @escaping @Sendable () -> Double = { ProcessInfo.processInfo.systemUptime }) {
        self.isEnabled = enabled
        self.clock = clock
        guard enabled else {
            timer = nil
            return
        }
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "courier.progress"))
        timer.schedule(deadline: .now() + .milliseconds(100), repeating: .milliseconds(100))
        self.timer = timer
        timer.setEventHandler { [weak self] in self?.redraw(force: false) }
        timer.resume()
    }

    /// Adds a line for a transfer named `name`; returns its identifier. Control characters in the name are shown,
    /// not obeyed (``Terminal/printable(_:keepingLineFeeds:)``): it comes from a URL.
    func add(name: String) -> Int {
        let name = Terminal.printable(name)
        let identifier = state.withLockedValue { state in
            defer { state.nextIdentifier += 1 }
            state.entries[state.nextIdentifier] = Entry(
                line: ProgressLine(name: name, received: 0, total: nil, rate: 0))
            state.order.append(state.nextIdentifier)
            state.dirty = true
            return state.nextIdentifier
        }
        return identifier
    }

    /// Records that transfer `identifier` has `received` of `total` bytes (`total` nil when unknown).
    func update(_ identifier: Int, received: Int64, total: Int64?) {
        let now = clock()
        state.withLockedValue { state in
            guard var entry = state.entries[identifier] else { return }
            entry.meter.record(total: received, at: now)
            entry.line.received = received
            entry.line.total = total.flatMap { $0 > 0 ? $0 : nil }
            entry.line.rate = entry.meter.rate
            state.entries[identifier] = entry
            state.dirty = true
        }
    }

    /// Restarts the rate of `identifier` (a retry or a resume starts counting again).
    func restart(_ identifier: Int) {
        state.withLockedValue { state in state.entries[identifier]?.meter = RateMeter() }
    }

    /// Ends transfer `identifier`: its last line is written above the block and stays.
    func finish(_ identifier: Int, succeeded: Bool, averageRate: Double?) {
        state.withLockedValue { state in
            guard var entry = state.entries.removeValue(forKey: identifier) else { return }
            state.order.removeAll { $0 == identifier }
            entry.line.phase = succeeded ? .finished : .failed
            if let averageRate { entry.line.rate = averageRate }
            if succeeded, entry.line.total == nil { entry.line.total = entry.line.received }
            if isEnabled { state.pending.append(entry.line.render(width: Terminal.width)) }
        }
        redraw(force: true)
    }

    /// Writes `text` (one or more lines) on standard error, above the progress block. Control characters other
    /// than the line feeds are shown, not obeyed: messages quote URLs, names, header values and certificates.
    func message(_ text: String) {
        let text = Terminal.printable(text, keepingLineFeeds: true)
        guard isEnabled else {
            Terminal.writeError(text.hasSuffix("\n") ? text : text + "\n")
            return
        }
        state.withLockedValue { state in
            state.pending.append(
                contentsOf: text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init))
        }
        redraw(force: true)
    }

    /// Draws the last state and leaves the cursor on a fresh line; nothing is drawn afterwards. For the end of
    /// the run and for an interruption.
    func stop() {
        timer?.cancel()
        guard isEnabled else { return }
        let output: String? = state.withLockedValue { state in
            guard !state.stopped else { return nil }
            var text = Self.frame(&state, width: Terminal.width)
            if state.drawnLines > 0 { text += "\n" }
            state.drawnLines = 0
            state.stopped = true
            return text
        }
        if let output { Terminal.writeError(output) }
    }

    private func redraw(force: Bool) {
        guard isEnabled else { return }
        let output: String? = state.withLockedValue { state in
            guard !state.stopped,
                force || state.dirty || state.order.contains(where: { state.entries[$0]?.line.total == nil })
            else { return nil }
            return Self.frame(&state, width: Terminal.width)
        }
        if let output, !output.isEmpty { Terminal.writeError(output) }
    }

    /// The bytes that bring the screen from what is drawn to the current state.
    private static func frame(_ state: inout State, width: Int) -> String {
        state.tick += 1
        state.dirty = false
        var text = ""
        // Back to the start of the block.
        if state.drawnLines > 0 {
            text += "\r"
            if state.drawnLines > 1 { text += "\u{1B}[\(state.drawnLines - 1)A" }
        }
        // Written in full: the terminal may wrap them, which is harmless above the block (only the block is
        // redrawn in place). Cut to the width, an error lost its reason on a narrow terminal.
        for line in state.pending {
            text += "\u{1B}[K" + line + "\n"
        }
        state.pending = []
        let lines = state.order.compactMap { identifier -> String? in
            guard var line = state.entries[identifier]?.line else { return nil }
            line.tick = state.tick
            return line.render(width: width)
        }
        for (index, line) in lines.enumerated() {
            text += "\u{1B}[K" + line + (index < lines.count - 1 ? "\n" : "")
        }
        // Lines of an earlier, taller block that are left below.
        if state.drawnLines > lines.count {
            text += "\u{1B}[J"
        }
        state.drawnLines = lines.count
        return text
    }
}
