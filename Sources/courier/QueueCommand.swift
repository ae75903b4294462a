import ArgumentParser
import Courier
import CourierHTTP
import Foundation

/// `courier queue`: the background downloads `courier get --background` left with `courierd`.
struct QueueCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queue",
        abstract: "List, cancel or wait for the background downloads courierd runs.",
        subcommands: [List.self, Cancel.self, Wait.self]
    )

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the daemon's tasks (of one session).")

        @Argument(help: ArgumentHelp("A background session identifier.", valueName: "id"))
        var identifier: String?

        func run() async throws {
            let reply = try await BackgroundCommandSupport.ask(.list(identifier: identifier))
            guard case .listed(let tasks) = reply else {
                print("courierd is not running: nothing is queued")
                return
            }
            for task in tasks {
                print(Self.line(for: task))
            }
        }

        /// One task as the listing shows it: session, number, state, bytes, and its description or its URL without
        /// any `user:password@` (an app's task may carry one; a listing ends up in terminals and bug reports). The
        /// identifier and the description are an app's text, which may hold what a server sent: their control
        /// characters are shown escaped, never sent to the terminal.
        static func line(for task: BackgroundTaskSnapshot) -> String {
            let total = task.bytesExpectedToReceive > 0 ? "/\(task.bytesExpectedToReceive)" : ""
            let target = task.taskDescription ?? task.originalRequest.url.map { $0.textWithoutCredentials() } ?? ""
            let identifier = Terminal.printable(task.identifier)
            let fields = "\(task.task)\t\(task.state.rawValue)\t\(task.bytesReceived)\(total)"
            return "\(identifier)\t\(fields)\t\(Terminal.printable(target))"
        }
    }

    struct Cancel: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Cancel a queued task.")

        @Argument(help: ArgumentHelp("The task's number (see 'courier queue list').", valueName: "task"))
        var task: Int

        @Option(
            name: .customLong("session"),
            help: ArgumentHelp("Its session, when the number is in several.", valueName: "id"))
        var identifier: String?

        func run() async throws {
            guard case .listed(let tasks) = try await BackgroundCommandSupport.ask(.list(identifier: identifier)) else {
                throw CLIError("courierd is not running: nothing to cancel")
            }
            let matches = tasks.filter { $0.task == task && $0.state != .completed }
            guard let match = matches.first else { throw CLIError("no unfinished task \(task)") }
            guard matches.count == 1 else {
                let sessions = matches.map(\.identifier).joined(separator: ", ")
                throw CLIError(
                    "task \(task) is in several sessions (\(sessions)): name one with --session", exitCode: 2)
            }
            _ = try await BackgroundCommandSupport.ask(.cancelQueued(identifier: match.identifier, task: task))
            print("cancelled \(match.identifier) \(task)")
        }
    }

    struct Wait: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Attach to a background session, show its transfers and save each file as it finishes.",
            discussion: "Exits when every task of the session has ended: 0 when all succeeded, 1 otherwise.")

        @Argument(help: ArgumentHelp("The background session identifier.", valueName: "id"))
        var identifier: String

        @Flag(name: [.customShort("s"), .customLong("silent")], help: "No progress and no messages but errors.")
        var silent = false

        func run() async throws {
            let identifier = self.identifier
            // What the daemon holds for the session now (later tasks are not waited for). The daemon is started when
            // it does not run: it quits a while after its last transfer ended (and does not outlive a reboot), with
            // finished downloads still waiting in its journal, which only a running daemon hands over.
            let listed = try await BackgroundCommandSupport.ask(.list(identifier: identifier), startingDaemon: true)
            guard case .listed(let queued) = listed, !queued.isEmpty else { return }
            let board = ProgressBoard(enabled: !silent && Terminal.standardErrorIsTerminal)
            let delegate = QueueWaitDelegate(board: board, quiet: silent)
            let session = await BackgroundCommandSupport.onThread {
                URLSession(
                    configuration: .background(withIdentifier: identifier), delegate: delegate, delegateQueue: nil)
            }
            // Refused (another `queue wait`, or an app, holds the session): no event would ever come, and the wait
            // below would never end.
            if let failure = session.backgroundAttachFailure {
                session.invalidateAndCancel()
                throw CLIError("cannot attach to the background session \(identifier): \(failure.detail)")
            }
            // Every event owed to an earlier process has been delivered (`urlSessionDidFinishEvents`), or every
            // task seen in the list has ended (each file saved before its completion).
            while !delegate.drained && delegate.completed < queued.count {
                try await Task.sleep(for: .milliseconds(50))
            }
            board.stop()
            session.finishTasksAndInvalidate()
            if delegate.failed > 0 { throw ExitCode(1) }
        }
    }
}

/// `courier daemon`: the state of this user's `courierd`.
struct DaemonCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "daemon",
        abstract: "Show or stop this user's courierd.",
        subcommands: [Status.self, Stop.self]
    )

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Whether courierd runs, and what it holds.")

        func run() async throws {
            guard case .status(let pid, let tasks, let clients) = try await BackgroundCommandSupport.ask(.status) else {
                print("courierd is not running")
                return
            }
            print("courierd \(pid): \(tasks) tasks, \(clients) clients")
        }
    }

    struct Stop: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Stop courierd (it continues unfinished transfers when it starts again).")

        func run() async throws {
            guard case .status(let pid, _, _) = try await BackgroundCommandSupport.ask(.stop) else {
                print("courierd is not running")
                return
            }
            print("stopped courierd \(pid)")
        }
    }
}

/// The blocking calls of the background commands, each on a thread of its own.
enum BackgroundCommandSupport {
    static func ask(_ request: BackgroundRequest, startingDaemon: Bool = false) async throws -> BackgroundReply? {
        let result = await onThread { Result { try BackgroundControl.ask(request, startingDaemon: startingDaemon) } }
        return try result.get()
    }

    static func onThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: work()) }
        }
    }
}
