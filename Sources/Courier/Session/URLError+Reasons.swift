import Foundation

/// The `userInfo` key of the reason a network was unavailable to a task (an `Int`, a
/// ``Foundation/URLError/NetworkUnavailableReason`` raw value). Darwin's name and value; the toolchain's Foundation
/// does not declare it (it declares `NSURLErrorBackgroundTaskCancelledReasonKey`, which Courier uses).
public let NSURLErrorNetworkUnavailableReasonKey = "NSURLErrorNetworkUnavailableReasonKey"

extension URLError {
    /// Why a background task was cancelled, in the error's `userInfo` under
    /// Foundation's `NSURLErrorBackgroundTaskCancelledReasonKey` (Darwin's values).
    ///
    /// Declared so that Darwin code compiles; Courier's background daemon never cancels a task on its own (it has no
    /// force-quit, background-refresh setting or resource pressure to report), so no error of Courier's carries one.
    public enum BackgroundTaskCancelledReason: Int, Sendable {
        /// The user force-quit the app.
        case userForceQuitApplication = 0
        /// The user turned background updates off.
        case backgroundUpdatesDisabled = 1
        /// The system lacked the resources to go on.
        case insufficientSystemResources = 2
    }

    /// Why the network a task needed was unavailable, in the error's `userInfo` under
    /// ``NSURLErrorNetworkUnavailableReasonKey`` (Darwin's values).
    ///
    /// Declared so that Darwin code compiles; Linux tells Courier of no cellular, expensive or constrained networks,
    /// so no error of Courier's carries one.
    public enum NetworkUnavailableReason: Int, Sendable {
        /// The task did not allow cellular access.
        case cellular = 0
        /// The task did not allow expensive networks.
        case expensive = 1
        /// The task did not allow constrained networks.
        case constrained = 2
    }

    /// The reason a background task was cancelled, when the error says; `nil` otherwise (always, for Courier's own
    /// errors: see ``BackgroundTaskCancelledReason``).
    public var backgroundTaskCancelledReason: BackgroundTaskCancelledReason? {
        (userInfo[NSURLErrorBackgroundTaskCancelledReasonKey] as? Int).flatMap(BackgroundTaskCancelledReason.init)
    }

    /// The reason the network was unavailable, when the error says; `nil` otherwise (always, for Courier's own
    /// errors: see ``NetworkUnavailableReason``).
    public var networkUnavailableReason: NetworkUnavailableReason? {
        (userInfo[NSURLErrorNetworkUnavailableReasonKey] as? Int).flatMap(NetworkUnavailableReason.init)
    }
}
