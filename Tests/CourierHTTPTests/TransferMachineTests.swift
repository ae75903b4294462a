import CourierHTTP
import Foundation
import Testing

/// The running side of a task, driven by event sequences. Every expected action list below is written from the
/// machine's documentation (what a URLSession user should see), not copied from a run.
@Suite("TransferMachine")
struct TransferMachineTests {
    typealias Machine = TransferMachine<String>

    /// One input to the machine; attempt numbers are explicit so that stale events can be sent.
    enum Event: Sendable {
        case start(delayed: Bool)
        case beginTimerFired
        case beginAnswered
        case suspend
        case resume
        case cancel(resumeData: Bool)
        case resourceTimer
        case prepared(Int)
        case head(Int)
        case awaitingDecision(Int)
        case accepted(Int)
        case followUp(Int)
        case drained
        case part(String, Int)
        case end(Int)
        case backpressure(Bool)
        case consumerClosed(TransferError?)
        case failed(Int, TransferError)
        /// A failure that is not about one attempt (`failed(_:)`).
        case failedTask(TransferError)
    }

    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        let events: [Event]
        let actions: [String]
        let phase: Machine.Phase

        init(_ name: String, events: [Event], actions: [String], phase: Machine.Phase) {
            self.name = name
            self.events = events
            self.actions = actions
            self.phase = phase
        }

        var testDescription: String { name }
    }

    // MARK: - Driving and rendering

    static func step(_ machine: inout Machine, _ event: Event) -> [Machine.Action] {
        Array(actions(of: event, on: &machine))
    }

    static func actions(of event: Event, on machine: inout Machine) -> Machine.Actions {
        switch event {
        case .start(let delayed): return machine.start(delayed: delayed)
        case .beginTimerFired: return machine.beginTimerFired()
        case .beginAnswered: return machine.beginAnswered()
        case .suspend: return machine.suspend()
        case .resume: return machine.resume()
        case .cancel(let resumeData): return machine.cancel(producingResumeData: resumeData)
        case .resourceTimer: return machine.resourceTimerFired()
        case .prepared(let attempt): return machine.prepared(attempt: attempt)
        case .head(let attempt): return machine.head(attempt: attempt)
        case .awaitingDecision(let attempt): return machine.awaitingDecision(attempt: attempt)
        case .accepted(let attempt): return machine.responseAccepted(attempt: attempt)
        case .followUp(let attempt): return machine.followUp(attempt: attempt)
        case .drained: return machine.drained()
        case .part(let part, let attempt): return machine.bodyPart(part, attempt: attempt)
        case .end(let attempt): return machine.end(attempt: attempt)
        case .backpressure(let on): return machine.backpressure(on)
        case .consumerClosed(let error): return machine.consumerClosed(error)
        case .failed(let attempt, let error): return machine.failed(attempt: attempt, error)
        case .failedTask(let error): return machine.failed(error)
        }
    }

    /// Runs `events` on a new machine: the actions of each event, and the machine afterwards.
    static func run(_ events: [Event]) -> (steps: [[Machine.Action]], machine: Machine) {
        var machine = Machine()
        let steps = events.map { step(&machine, $0) }
        return (steps, machine)
    }

    static func errorName(_ error: TransferError) -> String {
        switch error.urlErrorCode {
        case .cancelled: return "cancelled"
        case .timedOut: return "timedOut"
        case .networkConnectionLost: return "networkConnectionLost"
        case .cannotConnectToHost: return "cannotConnectToHost"
        case .cannotWriteToFile: return "cannotWriteToFile"
        default: return "code \(error.urlErrorCode.rawValue)"
        }
    }

    static func render(_ action: Machine.Action) -> String {
        switch action {
        case .armBeginTimer: return "armBeginTimer"
        case .askToBegin: return "askToBegin"
        case .startResourceClock: return "startResourceClock"
        case .pauseResourceClock: return "pauseResourceClock"
        case .resumeResourceClock: return "resumeResourceClock"
        case .prepare(let attempt): return "prepare(\(attempt))"
        case .startSource(let attempt): return "startSource(\(attempt))"
        case .pauseSource: return "pauseSource"
        case .resumeSource: return "resumeSource"
        case .runResponseSide(let attempt): return "runResponseSide(\(attempt))"
        case .deliverHead: return "deliverHead"
        case .deliver(let part): return "deliver(\(part))"
        case .deliverEnd: return "deliverEnd"
        case .drainSource(let attempt): return "drainSource(\(attempt))"
        case .cancelSource: return "cancelSource"
        case .complete(.success): return "complete(success)"
        case .complete(.failure(let error, let resumeData)):
            return "complete(failure(\(errorName(error))\(resumeData ? ", resumeData" : "")))"
        }
    }

    // MARK: - The table

    static let lost = TransferError.networkConnectionLost("the connection was reset")
    static let refused = TransferError.cannotConnectToHost("connection refused")
    static let diskFull = TransferError.cannotWriteToFile("no space left on device")

    static let cancelled = "complete(failure(cancelled))"
    static let timedOut = "complete(failure(timedOut))"

    /// Common openings of attempt 1, with the actions they produce.
    static let preparingEvents: [Event] = [.start(delayed: false)]
    static let preparingActions = ["startResourceClock", "prepare(1)"]
    static let requestingEvents = preparingEvents + [.prepared(1)]
    static let requestingActions = preparingActions + ["startSource(1)"]
    static let respondingEvents = requestingEvents + [.head(1)]
    static let respondingActions = requestingActions + ["runResponseSide(1)"]
    static let receivingEvents = respondingEvents + [.accepted(1)]
    static let receivingActions = respondingActions + ["deliverHead"]
    /// A whole successful load with a body of "a" and "b".
    static let successEvents = receivingEvents + [.part("a", 1), .part("b", 1), .end(1), .consumerClosed(nil)]
    static let successActions = receivingActions + ["deliver(a)", "deliver(b)", "deliverEnd", "complete(success)"]

    static let rows: [Row] = [
        // Success.
        Row(
            "plain success",
            events: [
                .start(delayed: false), .prepared(1), .head(1), .accepted(1), .part("a", 1), .part("b", 1), .end(1),
                .consumerClosed(nil),
            ],
            actions: [
                "startResourceClock", "prepare(1)", "startSource(1)", "runResponseSide(1)", "deliverHead",
                "deliver(a)", "deliver(b)", "deliverEnd", "complete(success)",
            ],
            phase: .completed),
        Row(
            "empty body",
            events: receivingEvents + [.end(1), .consumerClosed(nil)],
            actions: receivingActions + ["deliverEnd", "complete(success)"],
            phase: .completed),
        Row(
            "body handed on, consumer still closing",
            events: receivingEvents + [.part("a", 1), .end(1)],
            actions: receivingActions + ["deliver(a)", "deliverEnd"],
            phase: .finishing),

        // Delayed start.
        Row(
            "delayed start: begin timer, then the app's answer",
            events: [
                .start(delayed: true), .beginTimerFired, .beginAnswered, .prepared(1), .head(1), .accepted(1), .end(1),
                .consumerClosed(nil),
            ],
            actions: [
                "armBeginTimer", "askToBegin", "startResourceClock", "prepare(1)", "startSource(1)",
                "runResponseSide(1)", "deliverHead", "deliverEnd", "complete(success)",
            ],
            phase: .completed),
        Row(
            "delayed start waits for the answer",
            events: [.start(delayed: true), .beginTimerFired],
            actions: ["armBeginTimer", "askToBegin"],
            phase: .waitingToBegin),
        Row(
            "suspended while waiting to begin: the first source starts paused",
            events: [.start(delayed: true), .suspend, .beginTimerFired, .beginAnswered, .prepared(1), .resume],
            actions: [
                "armBeginTimer", "pauseResourceClock", "askToBegin", "startResourceClock", "pauseResourceClock",
                "prepare(1)", "startSource(1)", "pauseSource", "resumeResourceClock", "resumeSource",
            ],
            phase: .requesting(attempt: 1)),
        Row(
            "cancel while waiting to begin",
            events: [.start(delayed: true), .beginTimerFired, .cancel(resumeData: false), .beginAnswered],
            actions: ["armBeginTimer", "askToBegin", cancelled],
            phase: .completed),

        // Suspend before the first byte.
        Row(
            "suspend while preparing: the source starts paused",
            events: preparingEvents + [.suspend, .prepared(1), .resume, .head(1)],
            actions: preparingActions + [
                "pauseResourceClock", "startSource(1)", "pauseSource", "resumeResourceClock", "resumeSource",
                "runResponseSide(1)",
            ],
            phase: .responding(attempt: 1)),
        Row(
            "suspend and resume while preparing: the source starts running",
            events: preparingEvents + [.suspend, .resume, .prepared(1)],
            actions: preparingActions + ["pauseResourceClock", "resumeResourceClock", "startSource(1)"],
            phase: .requesting(attempt: 1)),
        Row(
            "suspend between prepared and head",
            events: requestingEvents + [.suspend, .resume, .head(1)],
            actions: requestingActions + [
                "pauseResourceClock", "pauseSource", "resumeResourceClock", "resumeSource", "runResponseSide(1)",
            ],
            phase: .responding(attempt: 1)),
        Row(
            "suspend twice, one resume",
            events: requestingEvents + [.suspend, .suspend, .resume, .resume],
            actions: requestingActions + ["pauseResourceClock", "pauseSource", "resumeResourceClock", "resumeSource"],
            phase: .requesting(attempt: 1)),
        Row(
            "resume without suspend is ignored",
            events: requestingEvents + [.resume],
            actions: requestingActions,
            phase: .requesting(attempt: 1)),

        // Hold and replay while suspended.
        Row(
            "parts and end held while suspended, replayed in order",
            events: receivingEvents + [
                .part("a", 1), .suspend, .part("b", 1), .part("c", 1), .end(1), .resume, .consumerClosed(nil),
            ],
            actions: receivingActions + [
                "deliver(a)", "pauseResourceClock", "pauseSource", "resumeResourceClock", "deliver(b)", "deliver(c)",
                "deliverEnd", "complete(success)",
            ],
            phase: .completed),
        Row(
            "held parts go first, then the source continues",
            events: receivingEvents + [.suspend, .part("a", 1), .resume, .part("b", 1)],
            actions: receivingActions + [
                "pauseResourceClock", "pauseSource", "resumeResourceClock", "deliver(a)", "resumeSource", "deliver(b)",
            ],
            phase: .receiving(attempt: 1)),
        Row(
            "end held while suspended is not handed on",
            events: receivingEvents + [.suspend, .end(1), .consumerClosed(nil)],
            actions: receivingActions + ["pauseResourceClock", "pauseSource"],
            phase: .receiving(attempt: 1)),
        Row(
            "accepted while suspended: head handed on, body held until resume",
            events: respondingEvents + [.suspend, .part("a", 1), .accepted(1), .part("b", 1), .resume],
            actions: respondingActions + [
                "pauseResourceClock", "pauseSource", "deliverHead", "resumeResourceClock", "deliver(a)", "deliver(b)",
                "resumeSource",
            ],
            phase: .receiving(attempt: 1)),

        // A head arriving while suspended.
        Row(
            "head while suspended is held with its body",
            events: requestingEvents + [.suspend, .head(1), .part("a", 1), .end(1)],
            actions: requestingActions + ["pauseResourceClock", "pauseSource"],
            phase: .headHeld(attempt: 1)),
        Row(
            "head held while suspended: response side runs on resume",
            events: requestingEvents + [.suspend, .head(1), .part("a", 1), .resume, .accepted(1), .end(1)],
            actions: requestingActions + [
                "pauseResourceClock", "pauseSource", "resumeResourceClock", "runResponseSide(1)", "resumeSource",
                "deliverHead", "deliver(a)", "deliverEnd",
            ],
            phase: .finishing),
        Row(
            "redirect during suspend",
            events: requestingEvents + [
                .suspend, .head(1), .resume, .followUp(1), .drained, .prepared(2), .head(2), .accepted(2), .end(2),
                .consumerClosed(nil),
            ],
            actions: requestingActions + [
                "pauseResourceClock", "pauseSource", "resumeResourceClock", "runResponseSide(1)", "resumeSource",
                "drainSource(1)", "prepare(2)", "startSource(2)", "runResponseSide(2)", "deliverHead", "deliverEnd",
                "complete(success)",
            ],
            phase: .completed),

        // The response side deciding.
        Row(
            "parts and end during the decision are held, released on accepted",
            events: respondingEvents + [.part("a", 1), .part("b", 1), .end(1), .accepted(1)],
            actions: respondingActions + ["deliverHead", "deliver(a)", "deliver(b)", "deliverEnd"],
            phase: .finishing),
        Row(
            "awaitingDecision pauses the source, accepted resumes it",
            events: respondingEvents + [.awaitingDecision(1), .part("a", 1), .accepted(1), .part("b", 1)],
            actions: respondingActions + ["pauseSource", "deliverHead", "deliver(a)", "resumeSource", "deliver(b)"],
            phase: .receiving(attempt: 1)),
        Row(
            "awaitingDecision while suspended: one pause, one resume",
            events: respondingEvents + [.suspend, .awaitingDecision(1), .resume, .accepted(1)],
            actions: respondingActions + [
                "pauseResourceClock", "pauseSource", "resumeResourceClock", "deliverHead", "resumeSource",
            ],
            phase: .receiving(attempt: 1)),
        Row(
            "decision never answered, then cancel",
            events: respondingEvents + [.awaitingDecision(1), .part("a", 1), .end(1), .cancel(resumeData: false)],
            actions: respondingActions + ["pauseSource", "cancelSource", cancelled],
            phase: .completed),
        Row(
            "resource timer during an unanswered decision",
            events: respondingEvents + [.awaitingDecision(1), .resourceTimer, .accepted(1)],
            actions: respondingActions + ["pauseSource", "cancelSource", timedOut],
            phase: .completed),

        // Follow-ups.
        Row(
            "follow-up: drain, then prepare the next attempt",
            events: respondingEvents + [
                .followUp(1), .drained, .prepared(2), .head(2), .accepted(2), .part("a", 2), .end(2),
                .consumerClosed(nil),
            ],
            actions: respondingActions + [
                "drainSource(1)", "prepare(2)", "startSource(2)", "runResponseSide(2)", "deliverHead", "deliver(a)",
                "deliverEnd", "complete(success)",
            ],
            phase: .completed),
        Row(
            "follow-up waits for the drain",
            events: respondingEvents + [.followUp(1), .prepared(2)],
            actions: respondingActions + ["drainSource(1)"],
            phase: .draining(nextAttempt: 2)),
        Row(
            "follow-up after a paused decision: the next source starts running",
            events: respondingEvents + [.awaitingDecision(1), .followUp(1), .drained, .prepared(2)],
            actions: respondingActions + ["pauseSource", "drainSource(1)", "prepare(2)", "startSource(2)"],
            phase: .requesting(attempt: 2)),
        Row(
            "follow-up while suspended: the next source starts paused",
            events: respondingEvents + [.suspend, .followUp(1), .drained, .prepared(2), .resume],
            actions: respondingActions + [
                "pauseResourceClock", "pauseSource", "drainSource(1)", "prepare(2)", "startSource(2)", "pauseSource",
                "resumeResourceClock", "resumeSource",
            ],
            phase: .requesting(attempt: 2)),
        Row(
            "events of the abandoned attempt are ignored",
            events: respondingEvents + [
                .part("a", 1), .followUp(1), .part("b", 1), .end(1), .head(1), .accepted(1), .failed(1, lost),
                .drained, .prepared(1), .prepared(2), .part("c", 1), .head(1), .head(2), .end(1), .accepted(2),
            ],
            actions: respondingActions + [
                "drainSource(1)", "prepare(2)", "startSource(2)", "runResponseSide(2)", "deliverHead",
            ],
            phase: .receiving(attempt: 2)),
        Row(
            "two follow-ups",
            events: respondingEvents + [
                .followUp(1), .drained, .prepared(2), .head(2), .followUp(2), .drained, .prepared(3), .head(3),
                .accepted(3),
            ],
            actions: respondingActions + [
                "drainSource(1)", "prepare(2)", "startSource(2)", "runResponseSide(2)", "drainSource(2)",
                "prepare(3)", "startSource(3)", "runResponseSide(3)", "deliverHead",
            ],
            phase: .receiving(attempt: 3)),

        // Cancel.
        Row(
            "cancel before start",
            events: [.cancel(resumeData: false), .start(delayed: false), .prepared(1)],
            actions: [cancelled],
            phase: .completed),
        Row(
            "cancel while preparing",
            events: preparingEvents + [.cancel(resumeData: false), .prepared(1), .head(1)],
            actions: preparingActions + [cancelled],
            phase: .completed),
        Row(
            "cancel while requesting",
            events: requestingEvents + [.cancel(resumeData: false), .head(1)],
            actions: requestingActions + ["cancelSource", cancelled],
            phase: .completed),
        Row(
            "cancel while the head is held",
            events: requestingEvents + [.suspend, .head(1), .cancel(resumeData: false), .resume],
            actions: requestingActions + ["pauseResourceClock", "pauseSource", "cancelSource", cancelled],
            phase: .completed),
        Row(
            "cancel while receiving",
            events: receivingEvents + [.part("a", 1), .cancel(resumeData: false), .part("b", 1), .end(1)],
            actions: receivingActions + ["deliver(a)", "cancelSource", cancelled],
            phase: .completed),
        Row(
            "cancel while draining",
            events: respondingEvents + [.followUp(1), .cancel(resumeData: false), .drained, .prepared(2)],
            actions: respondingActions + ["drainSource(1)", "cancelSource", cancelled],
            phase: .completed),
        Row(
            "cancel with resume data",
            events: receivingEvents + [.part("a", 1), .cancel(resumeData: true), .cancel(resumeData: false)],
            actions: receivingActions + ["deliver(a)", "cancelSource", "complete(failure(cancelled, resumeData))"],
            phase: .completed),
        Row(
            "cancel racing the end: end handed on first, cancel ignored",
            events: receivingEvents + [.end(1), .cancel(resumeData: false), .consumerClosed(nil)],
            actions: receivingActions + ["deliverEnd", "complete(success)"],
            phase: .completed),
        Row(
            "cancel racing the end: cancel first, end ignored",
            events: receivingEvents + [.cancel(resumeData: false), .end(1), .consumerClosed(nil)],
            actions: receivingActions + ["cancelSource", cancelled],
            phase: .completed),
        Row(
            "cancel while suspended with the end held",
            events: receivingEvents + [.suspend, .part("a", 1), .end(1), .cancel(resumeData: false), .resume],
            actions: receivingActions + ["pauseResourceClock", "pauseSource", "cancelSource", cancelled],
            phase: .completed),

        // Resource timer.
        Row(
            "resource timer while preparing",
            events: preparingEvents + [.resourceTimer, .prepared(1)],
            actions: preparingActions + [timedOut],
            phase: .completed),
        Row(
            "resource timer while receiving",
            events: receivingEvents + [.part("a", 1), .resourceTimer, .end(1)],
            actions: receivingActions + ["deliver(a)", "cancelSource", timedOut],
            phase: .completed),
        Row(
            "resource timer while finishing is ignored",
            events: receivingEvents + [.end(1), .resourceTimer, .consumerClosed(nil)],
            actions: receivingActions + ["deliverEnd", "complete(success)"],
            phase: .completed),
        Row(
            "resource timer after completion is ignored",
            events: successEvents + [.resourceTimer],
            actions: successActions,
            phase: .completed),

        // After completion.
        Row(
            "events after success are ignored",
            events: successEvents + [
                .part("c", 1), .end(1), .head(1), .resume, .suspend, .resume, .failed(1, lost), .failedTask(diskFull),
                .backpressure(true), .cancel(resumeData: true), .consumerClosed(nil), .start(delayed: false),
            ],
            actions: successActions,
            phase: .completed),
        Row(
            "events after a cancel are ignored",
            events: receivingEvents + [
                .cancel(resumeData: false), .part("a", 1), .end(1), .head(1), .accepted(1), .suspend, .resume,
                .failed(1, lost), .backpressure(true), .resourceTimer, .consumerClosed(nil), .drained,
            ],
            actions: receivingActions + ["cancelSource", cancelled],
            phase: .completed),

        // Backpressure.
        Row(
            "backpressure pauses and resumes the source",
            events: receivingEvents + [
                .part("a", 1), .backpressure(true), .backpressure(true), .part("b", 1), .backpressure(false),
                .backpressure(false), .part("c", 1),
            ],
            actions: receivingActions + ["deliver(a)", "pauseSource", "deliver(b)", "resumeSource", "deliver(c)"],
            phase: .receiving(attempt: 1)),
        Row(
            "backpressure, then suspend: no second pause; resume keeps the pause",
            events: receivingEvents + [.backpressure(true), .suspend, .resume, .backpressure(false)],
            actions: receivingActions + ["pauseSource", "pauseResourceClock", "resumeResourceClock", "resumeSource"],
            phase: .receiving(attempt: 1)),
        Row(
            "suspend, then backpressure on and off: the source stays paused until resume",
            events: receivingEvents + [.suspend, .backpressure(true), .backpressure(false), .resume],
            actions: receivingActions + ["pauseResourceClock", "pauseSource", "resumeResourceClock", "resumeSource"],
            phase: .receiving(attempt: 1)),

        // Failures.
        Row(
            "failure of the current attempt",
            events: receivingEvents + [.part("a", 1), .failed(1, lost), .end(1)],
            actions: receivingActions + ["deliver(a)", "cancelSource", "complete(failure(networkConnectionLost))"],
            phase: .completed),
        Row(
            "failure while preparing",
            events: preparingEvents + [.failed(1, refused), .prepared(1)],
            actions: preparingActions + ["complete(failure(cannotConnectToHost))"],
            phase: .completed),
        Row(
            "failure of an old attempt is ignored",
            events: respondingEvents + [
                .followUp(1), .failed(1, lost), .drained, .prepared(2), .failed(1, lost), .head(2), .failed(2, lost),
            ],
            actions: respondingActions + [
                "drainSource(1)", "prepare(2)", "startSource(2)", "runResponseSide(2)", "cancelSource",
                "complete(failure(networkConnectionLost))",
            ],
            phase: .completed),
        Row(
            "task failure while draining",
            events: respondingEvents + [.followUp(1), .failedTask(diskFull), .drained],
            actions: respondingActions + ["drainSource(1)", "cancelSource", "complete(failure(cannotWriteToFile))"],
            phase: .completed),
        Row(
            "failure while finishing is ignored",
            events: receivingEvents + [.end(1), .failed(1, lost), .failedTask(diskFull), .consumerClosed(nil)],
            actions: receivingActions + ["deliverEnd", "complete(success)"],
            phase: .completed),
        Row(
            "consumer closes with an error",
            events: receivingEvents + [.part("a", 1), .end(1), .consumerClosed(diskFull)],
            actions: receivingActions + ["deliver(a)", "deliverEnd", "complete(failure(cannotWriteToFile))"],
            phase: .completed),
        Row(
            "consumerClosed before the end is ignored",
            events: receivingEvents + [.consumerClosed(nil), .part("a", 1)],
            actions: receivingActions + ["deliver(a)"],
            phase: .receiving(attempt: 1)),

        // Stray and repeated events.
        Row(
            "double start is ignored",
            events: [.start(delayed: false), .start(delayed: false), .start(delayed: true), .beginAnswered],
            actions: ["startResourceClock", "prepare(1)"],
            phase: .preparing(attempt: 1)),
        Row(
            "stale or early transport events are ignored",
            events: preparingEvents + [
                .prepared(2), .head(1), .part("a", 1), .end(1), .drained, .accepted(1), .prepared(1), .prepared(1),
            ],
            actions: preparingActions + ["startSource(1)"],
            phase: .requesting(attempt: 1)),
    ]

    @Test(arguments: TransferMachineTests.rows)
    func sequence(_ row: Row) {
        let (steps, machine) = Self.run(row.events)
        #expect(steps.flatMap { $0 }.map(Self.render) == row.actions)
        #expect(machine.phase == row.phase)
    }

    // MARK: - Properties

    /// `complete` is emitted at most once, exactly when the machine ends, and nothing follows it; the event that
    /// ends the task does nothing else but, when a source runs, cancel it first.
    static func checkCompletion(_ steps: [[Machine.Action]], _ machine: Machine) {
        let flat = steps.flatMap { $0 }.map(render)
        let completes = flat.indices.filter { flat[$0].hasPrefix("complete(") }
        #expect(completes.count <= 1)
        if let index = completes.first {
            #expect(index == flat.count - 1)
        }
        #expect((completes.count == 1) == (machine.phase == .completed))
        for actions in steps.map({ $0.map(render) }) where actions.contains(where: { $0.hasPrefix("complete(") }) {
            #expect(actions.count == 1 || (actions.count == 2 && actions[0] == "cancelSource"))
        }
    }

    /// For the current source (the actions since its `startSource`), pauses minus resumes is always 0 or 1, and
    /// matches `isSourcePaused` while the source runs.
    static func checkSourcePauses(_ steps: [[Machine.Action]], _ machine: Machine) {
        var balance = 0
        for action in steps.flatMap({ $0 }) {
            switch action {
            case .startSource: balance = 0
            case .pauseSource: balance += 1
            case .resumeSource: balance -= 1
            default: break
            }
            #expect((0...1).contains(balance))
        }
        switch machine.phase {
        case .requesting, .headHeld, .responding, .receiving:
            #expect(balance == (machine.isSourcePaused ? 1 : 0))
            let wanted = machine.isSuspended || machine.isBackpressured || machine.isAwaitingDecision
            #expect(machine.isSourcePaused == wanted)
        default:
            break
        }
    }

    /// The consumer sees one head, then parts in the order they were sent, then at most one end, and succeeds
    /// only after the end.
    static func checkConsumerOrder(_ steps: [[Machine.Action]]) {
        var headSeen = false
        var endSeen = false
        var lastPart = -1
        for action in steps.flatMap({ $0 }) {
            switch action {
            case .deliverHead:
                #expect(!headSeen)
                headSeen = true
            case .deliver(let part):
                #expect(headSeen && !endSeen)
                let number = Int(part.dropFirst()) ?? Int.max
                #expect(number > lastPart)
                lastPart = number
            case .deliverEnd:
                #expect(headSeen && !endSeen)
                endSeen = true
            case .complete(.success):
                #expect(endSeen)
            default:
                break
            }
        }
    }

    @Test(arguments: TransferMachineTests.rows)
    func completeIsLastAndOnce(_ row: Row) {
        let (steps, machine) = Self.run(row.events)
        Self.checkCompletion(steps, machine)
    }

    @Test(arguments: TransferMachineTests.rows)
    func sourcePausesBalance(_ row: Row) {
        let (steps, machine) = Self.run(row.events)
        Self.checkSourcePauses(steps, machine)
    }

    /// A deterministic generator, so that a failing sequence can be replayed.
    struct SplitMix64: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// An event that moves a task in `phase` along (a random one of them), so that random runs get far.
    static func progress(
        _ phase: Machine.Phase, part: inout Int, using random: inout SplitMix64
    ) -> Event {
        func send(_ attempt: Int) -> Event {
            part += 1
            return .part("p\(part)", attempt)
        }
        switch phase {
        case .idle: return .start(delayed: Bool.random(using: &random))
        case .waitingToBegin: return Bool.random(using: &random) ? .beginTimerFired : .beginAnswered
        case .preparing(let attempt): return .prepared(attempt)
        case .requesting(let attempt): return .head(attempt)
        case .headHeld(let attempt): return Bool.random(using: &random) ? send(attempt) : .resume
        case .responding(let attempt):
            switch Int.random(in: 0..<6, using: &random) {
            case 0: return .followUp(attempt)
            case 1: return .awaitingDecision(attempt)
            case 2: return send(attempt)
            case 3: return .end(attempt)
            default: return .accepted(attempt)
            }
        case .draining: return .drained
        case .receiving(let attempt): return Int.random(in: 0..<4, using: &random) == 0 ? .end(attempt) : send(attempt)
        case .finishing, .completed: return .consumerClosed(Bool.random(using: &random) ? nil : diskFull)
        }
    }

    /// Any event, with a random (mostly the current) attempt number.
    static func anyEvent(_ machine: Machine, part: inout Int, using random: inout SplitMix64) -> Event {
        let attempt =
            Int.random(in: 0..<3, using: &random) == 0 ? Int.random(in: 0...3, using: &random) : machine.attempt
        switch Int.random(in: 0..<16, using: &random) {
        case 0: return .start(delayed: Bool.random(using: &random))
        case 1: return .beginTimerFired
        case 2: return .beginAnswered
        case 3, 4: return .suspend
        case 5, 6: return .resume
        case 7, 8: return .backpressure(Bool.random(using: &random))
        case 9: return .prepared(attempt)
        case 10: return .head(attempt)
        case 11: return .accepted(attempt)
        case 12:
            part += 1
            return .part("p\(part)", attempt)
        case 13: return .end(attempt)
        case 14: return .followUp(attempt)
        default:
            // Terminal events, rarely.
            switch Int.random(in: 0..<6, using: &random) {
            case 0: return .cancel(resumeData: Bool.random(using: &random))
            case 1: return .resourceTimer
            case 2: return .failed(attempt, lost)
            case 3: return .failedTask(diskFull)
            default: return .drained
            }
        }
    }

    /// Random sequences (half of the events move the task along, half are anything, stale ones included) keep
    /// every property, and nothing happens after completion.
    @Test func randomSequencesKeepTheInvariants() {
        var random = SplitMix64(state: 0x00C0_FFEE)
        var outcomes: Set<String> = []
        for _ in 0..<3_000 {
            var machine = Machine()
            var events: [Event] = []
            var steps: [[Machine.Action]] = []
            var part = 0
            for _ in 0..<Int.random(in: 1...40, using: &random) {
                let event =
                    Bool.random(using: &random)
                    ? Self.progress(machine.phase, part: &part, using: &random)
                    : Self.anyEvent(machine, part: &part, using: &random)
                let wasCompleted = machine.phase == .completed
                let actions = Self.step(&machine, event)
                if wasCompleted { #expect(actions.isEmpty, "\(events + [event])") }
                events.append(event)
                steps.append(actions)
            }
            Self.checkCompletion(steps, machine)
            Self.checkSourcePauses(steps, machine)
            Self.checkConsumerOrder(steps)
            if let last = steps.last(where: { !$0.isEmpty })?.last, case .complete = last {
                outcomes.insert(Self.render(last))
            }
        }
        // The runs reached every kind of ending.
        #expect(outcomes.contains("complete(success)"))
        #expect(outcomes.contains("complete(failure(cancelled))"))
        #expect(outcomes.contains("complete(failure(timedOut))"))
        #expect(outcomes.contains("complete(failure(cannotWriteToFile))"))
    }

    @Test(arguments: TransferMachineTests.rows)
    func consumerOrder(_ row: Row) {
        // Table parts are letters; number them by order of sending so the order check applies.
        var names: [String: Int] = [:]
        for case .part(let part, _) in row.events where names[part] == nil { names[part] = names.count }
        let (steps, _) = Self.run(row.events)
        let numbered = steps.map { actions in
            actions.map { action -> Machine.Action in
                if case .deliver(let part) = action { return .deliver("p\(names[part] ?? -1)") }
                return action
            }
        }
        Self.checkConsumerOrder(numbered)
    }
}

@Suite("Transfer machine actions")
struct TransferMachineActionsTests {
    typealias Machine = TransferMachine<String>

    /// The inline slots and the overflow keep the order, at every count around the boundary.
    @Test(arguments: [0, 1, 2, 3, 4, 5, 9])
    func actionsKeepTheirOrderInlineAndBeyond(count: Int) {
        var actions = Machine.Actions()
        for index in 0..<count { actions.append(.deliver("p\(index)")) }
        #expect(actions.count == count)
        let parts = actions.map { action -> String in
            if case .deliver(let part) = action { return part }
            return "?"
        }
        #expect(parts == (0..<count).map { "p\($0)" })
    }

    /// A resume that releases many held parts returns them all, in order, after the clock.
    @Test func aResumeReleasesMoreHeldPartsThanTheInlineSlots() {
        var machine = Machine()
        _ = machine.start(delayed: false)
        _ = machine.prepared(attempt: 1)
        _ = machine.head(attempt: 1)
        _ = machine.responseAccepted(attempt: 1)
        _ = machine.suspend()
        for index in 0..<6 { _ = machine.bodyPart("p\(index)", attempt: 1) }
        let released = Array(machine.resume()).compactMap { action -> String? in
            if case .deliver(let part) = action { return part }
            return nil
        }
        #expect(released == (0..<6).map { "p\($0)" })
    }
}
