import Foundation
import Logging
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
    /// The credential fields authentication retries wrote into the request, kept out of what the app sees.
    var answeredCredentials: AnsweredCredentials?
    /// The request a custom `URLProtocol` was redirected to, for this attempt's response side.
    var protocolRedirect: URLRequest?
    /// Whether `taskIsWaitingForConnectivity` was reported (once per task).
    var reportedWaitingForConnectivity = false
    /// The `earliestBeginDate` timer.
    var beginTimer: Scheduled<Void>?
    var awaitingBegin = false
    var pendingDecision: CheckedContinuation<TaskDecisionAnswer?, Never>?
    /// The body ended and the app is asked `willCacheResponse` (the task completes after its answer).
    var cacheDecisionPending = false
    /// A resumed download waiting for the response to its range request.
    var resumeProgress: ResumeProgress?
    /// The length the file must reach for a resumed range to be complete (see `ResumeDecision.append`).
    var resumedFinalLength: Int64?
    /// A partial file this task claimed for resuming and has not opened yet (see `DownloadDirectory.claim`).
    var claimedPartialFile: URL?
    /// The finished download's file.
    var downloadedFile: URL?
    /// The session's logger with the task's identifiers, kept only when debug lines are on.
    var debugLogger: Logger?
    /// Asks the task's own delegate about TLS connections, in a session without a delegate.
    var taskTrustEvaluator: TaskTrustEvaluator?
}

extension TaskEngine {
    /// The rare state for writing: made when first needed.
    private var writableRareState: RareState {
        if let rareState { return rareState }
        let made = RareState()
        rareState = made
        return made
    }

    /// Writes into the rare state, leaving it unmade for a default value (most writes on the hot path clear what was
    /// never set). A closure rather than a key path: a key path costs a runtime lookup on every request, a closure
    /// is inlined.
    private func setRare(isDefault: Bool, _ write: (RareState) -> Void) {
        if isDefault, rareState == nil { return }
        write(writableRareState)
    }

    var redirectCount: Int {
        get { rareState?.redirectCount ?? 0 }
        set { setRare(isDefault: newValue == 0) { $0.redirectCount = newValue } }
    }
    var multipart: MultipartReplaceDelivery? {
        get { rareState?.multipart }
        set { setRare(isDefault: newValue == nil) { $0.multipart = newValue } }
    }
    var multipartEndPending: Bool {
        get { rareState?.multipartEndPending ?? false }
        set { setRare(isDefault: !newValue) { $0.multipartEndPending = newValue } }
    }
    var authentication: AuthenticationState? {
        get { rareState?.authentication }
        set { setRare(isDefault: newValue == nil) { $0.authentication = newValue } }
    }
    var answeredCredentials: AnsweredCredentials? {
        get { rareState?.answeredCredentials }
        set { setRare(isDefault: newValue == nil) { $0.answeredCredentials = newValue } }
    }
    var protocolRedirect: URLRequest? {
        get { rareState?.protocolRedirect }
        set { setRare(isDefault: newValue == nil) { $0.protocolRedirect = newValue } }
    }
    var reportedWaitingForConnectivity: Bool {
        get { rareState?.reportedWaitingForConnectivity ?? false }
        set { setRare(isDefault: !newValue) { $0.reportedWaitingForConnectivity = newValue } }
    }
    var beginTimer: Scheduled<Void>? {
        get { rareState?.beginTimer }
        set { setRare(isDefault: newValue == nil) { $0.beginTimer = newValue } }
    }
    var awaitingBegin: Bool {
        get { rareState?.awaitingBegin ?? false }
        set { setRare(isDefault: !newValue) { $0.awaitingBegin = newValue } }
    }
    var pendingDecision: CheckedContinuation<TaskDecisionAnswer?, Never>? {
        get { rareState?.pendingDecision }
        set { setRare(isDefault: newValue == nil) { $0.pendingDecision = newValue } }
    }
    var cacheDecisionPending: Bool {
        get { rareState?.cacheDecisionPending ?? false }
        set { setRare(isDefault: !newValue) { $0.cacheDecisionPending = newValue } }
    }
    var resumeProgress: ResumeProgress? {
        get { rareState?.resumeProgress }
        set { setRare(isDefault: newValue == nil) { $0.resumeProgress = newValue } }
    }
    var resumedFinalLength: Int64? {
        get { rareState?.resumedFinalLength }
        set { setRare(isDefault: newValue == nil) { $0.resumedFinalLength = newValue } }
    }
    var claimedPartialFile: URL? {
        get { rareState?.claimedPartialFile }
        set { setRare(isDefault: newValue == nil) { $0.claimedPartialFile = newValue } }
    }
    var downloadedFile: URL? {
        get { rareState?.downloadedFile }
        set { setRare(isDefault: newValue == nil) { $0.downloadedFile = newValue } }
    }
    var taskTrustEvaluator: TaskTrustEvaluator? {
        get { rareState?.taskTrustEvaluator }
        set { setRare(isDefault: newValue == nil) { $0.taskTrustEvaluator = newValue } }
    }
    /// Most engines never log: a logger of their own (a copy of the handler's existential and the label) would be
    /// carried by every queued request.
    var debugLogger: Logger? {
        get { rareState?.debugLogger }
        set { setRare(isDefault: newValue == nil) { $0.debugLogger = newValue } }
    }
}
