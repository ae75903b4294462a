import Courier
import Foundation

/// One connection to the daemon: an app's background session once it attached, or a one-off client (the
/// `courier` command listing or cancelling). Touched only on the daemon's queue, except its channel.
final class DaemonClient: @unchecked Sendable {
    let channel: FrameChannel
    let serial: Int
    /// The session identifier this client attached to, if it did.
    var attached: String?

    init(channel: FrameChannel, serial: Int) {
        self.channel = channel
        self.serial = serial
    }

    func send(_ reply: BackgroundReply) {
        channel.send(reply)
    }
}
