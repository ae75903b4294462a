import Courier
import Foundation

/// `sessionSendsLaunchEvents` on Linux: when a task ends and no process has its session open, the daemon runs the
/// command the session registered, so that a program can be started again to collect its results. Its standard error
/// goes to the daemon's log.
extension Daemon {
    /// Runs `identifier`'s launch command if it has one, no process is attached and it did not run since the last
    /// attach. Waits a moment first, so that tasks ending together cause one launch.
    func launchIfDetached(_ identifier: String) {
        guard attachments[identifier] == nil, !launched.contains(identifier),
            let data = try? journal.launch(for: identifier),
            let launch = try? JSONDecoder().decode(BackgroundLaunch.self, from: data),
            let executable = launch.command.first
        else { return }
        launched.insert(identifier)
        queue.asyncAfter(deadline: .now() + 0.2) { [self] in
            guard attachments[identifier] == nil else { return }
            do throws(UnixSocket.Failure) {
                let pid = try DetachedProcess.spawn(
                    executable, arguments: Array(launch.command.dropFirst()),
                    environment: ProcessInfo.processInfo.environment,
                    log: location.runtimeFolder.appendingPathComponent("courierd.log"))
                logger.info("session \(identifier): launched \(executable) (\(pid)) for its events")
            } catch {
                logger.error("session \(identifier): cannot launch \(executable): \(UnixSocket.describe(error.code))")
            }
        }
    }
}
