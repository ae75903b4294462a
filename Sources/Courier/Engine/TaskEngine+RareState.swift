import Foundation
import NIOCore

/// The engine's state that most tasks never touch — redirects, authentication, a decision waited for, an
/// `earliestBeginDate` timer, a resumed download, a multipart body — in one object made at the first write of a
/// value, so that every engine does not carry room for all of it (a queued request's memory is mostly its engine).
///
/// Confined to the engine's executor, as the rest of the engine's state.
final class RareState {
    var redirectCount = 0
    /// A `multipart/x-mixed-replace` body being delivered part by part (data tasks).
    var multipart: MultipartReplaceDelivery?
    /// The body ended while a part's response still waited for the app.
    var multipartEndPending = false
    /// The task's HTTP authentication, from its first 401 or 407 on.
    var authentication: AuthenticationState?
    /// The request a custom `URLProtocol` was redirected to, for this attempt's response side.
    var protocolRedirect: URLRequest?
    /// Whether `taskIsWaitingForConnectivity` was reported (once per task).
    var reportedWaitingForConnectivity = false
    /// The `earliestBeginDate` timer.
    var beginTimer: Scheduled<Void>?
    var awaitingBegin = false
    var pendingDecision: CheckedContinuation<TaskDecisionAnswer?, Never>?
    /// A resumed download waiting for the response to its range request.
    var resumeProgress: ResumeProgress?
    /// A partial file this task claimed for resuming and has not opened yet (see `DownloadDirectory.claim`).
    var claimedPartialFile: URL?
    /// The finished download's file.
    var downloadedFile: URL?
}

extension TaskEngine {
    /// The rare state for writing: made when first needed.
    private var writableRareState: RareState {
        if let rareState { return rareState }
        let made = RareState()
        rareState = made
        return made
    }

    /// Writes `value` at `path` of the rare state, without making the state for a value equal to the default.
    private func setRare<Value>(_ path: ReferenceWritableKeyPath<RareState, Value>, _ value: Value, isDefault: Bool) {
        if isDefault, rareState == nil { return }
        writableRareState[keyPath: path] = value
    }

    var redirectCount: Int {
        get { rareState?.redirectCount ?? 0 }
        set { setRare(\.redirectCount, newValue, isDefault: newValue == 0) }
    }
    var multipart: MultipartReplaceDelivery? {
        get { rareState?.multipart }
        set { setRare(\.multipart, newValue, isDefault: newValue == nil) }
    }
    var multipartEndPending: Bool {
        get { rareState?.multipartEndPending ?? false }
        set { setRare(\.multipartEndPending, newValue, isDefault: !newValue) }
    }
    var authentication: AuthenticationState? {
        get { rareState?.authentication }
        set { setRare(\.authentication, newValue, isDefault: newValue == nil) }
    }
    var protocolRedirect: URLRequest? {
        get { rareState?.protocolRedirect }
        set { setRare(\.protocolRedirect, newValue, isDefault: newValue == nil) }
    }
    var reportedWaitingForConnectivity: Bool {
        get { rareState?.reportedWaitingForConnectivity ?? false }
        set { setRare(\.reportedWaitingForConnectivity, newValue, isDefault: !newValue) }
    }
    var beginTimer: Scheduled<Void>? {
        get { rareState?.beginTimer }
        set { setRare(\.beginTimer, newValue, isDefault: newValue == nil) }
    }
    var awaitingBegin: Bool {
        get { rareState?.awaitingBegin ?? false }
        set { setRare(\.awaitingBegin, newValue, isDefault: !newValue) }
    }
    var pendingDecision: CheckedContinuation<TaskDecisionAnswer?, Never>? {
        get { rareState?.pendingDecision }
        set { setRare(\.pendingDecision, newValue, isDefault: newValue == nil) }
    }
    var resumeProgress: ResumeProgress? {
        get { rareState?.resumeProgress }
        set { setRare(\.resumeProgress, newValue, isDefault: newValue == nil) }
    }
    var claimedPartialFile: URL? {
        get { rareState?.claimedPartialFile }
        set { setRare(\.claimedPartialFile, newValue, isDefault: newValue == nil) }
    }
    var downloadedFile: URL? {
        get { rareState?.downloadedFile }
        set { setRare(\.downloadedFile, newValue, isDefault: newValue == nil) }
    }
}
