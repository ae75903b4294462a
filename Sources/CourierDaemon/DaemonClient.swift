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

    /// Sends `reply`; one too long for a frame (a listing of tens of thousands of tasks) is answered with a refusal
    /// instead, so that the client is not left waiting for it.
    func send(_ reply: BackgroundReply) {
        guard !channel.send(reply) else { return }
        channel.send(
            BackgroundReply.refused(
                code: URLError.Code.dataLengthExceedsMaximum.rawValue,
                reason: "courierd's answer is longer than a message may be (\(FrameChannel.maximumFrameLength) bytes)"))
    }
}
