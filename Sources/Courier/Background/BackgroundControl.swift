import CourierHTTP
import CourierStore
import Foundation

/// One-off questions to `courierd` that need no session: what is queued, cancel a queued task, the daemon's status,
/// stop it (the `courier queue` and `courier daemon` commands). Blocking: call off the event loops.
package enum BackgroundControl {
    /// Sends `request` and returns the daemon's first answer; `nil` when no daemon runs (and `startingDaemon` is
    /// false) or it closed the connection.
    package static func ask(
        _ request: BackgroundRequest, startingDaemon: Bool = false,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(TransferError) -> BackgroundReply? {
        let location = BackgroundLocation(environment: environment)
        let channel: FrameChannel
        if startingDaemon {
            channel = try DaemonLauncher.connect(location: location, environment: environment)
        } else {
            guard case .success(let descriptor) = DaemonLauncher.connectToRunning(location) else { return nil }
            channel = FrameChannel(descriptor: descriptor, label: "control")
        }
        defer { channel.shutDown() }
        channel.setReceiveTimeout(seconds: BackgroundSessionClient.answerTimeout)
        guard channel.sendNow(request) else { return nil }
        return channel.receive(BackgroundReply.self)
    }
}
