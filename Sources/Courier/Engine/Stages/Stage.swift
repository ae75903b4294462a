import CourierHTTP
import Foundation

/// What a request stage decided.
enum RequestStep: Sendable {
    /// Go on with this request.
    case proceed(URLRequest)
    /// Answer without the network: this source produces the response (a cache hit, a custom `URLProtocol`).
    case respond(any ResponseSource)
}

/// What a response stage decided.
enum ResponseStep: Sendable {
    /// Go on with this response (the last stage's answer is delivered).
    case proceed(URLResponse)
    /// Send this request instead (a redirect, a retry with credentials): the current body is drained.
    /// `dropsBody` when the follow-up must not carry the request body (a 303, or a 301/302 POST).
    case followUp(URLRequest, dropsBody: Bool)
    /// Send this request again, for the same resource (a retry with credentials): the current body is drained, as
    /// for a follow-up, but it is not a redirect and does not count against the redirect limit.
    case retry(URLRequest)
    /// Deliver this response, to a download file instead of the data consumer (`.becomeDownload`).
    case proceedAsDownload(URLResponse)
    /// Hand the connection over as a stream task (`.becomeStream`); the response side ends here.
    case proceedAsStream(URLResponse)
}

/// One step of the request side. Stages run in the order ``StageChain`` lists them, on every attempt.
///
/// ``immediate(_:in:)`` runs on the engine's executor and must be cheap and never call user code; it answers
/// `nil` when the stage must wait for something (user code, a delegate, storage I/O): the chain then continues
/// in ``process(_:in:)``, on a Swift concurrency thread — never an event loop, never under a lock.
protocol RequestStage: Sendable {
    func immediate(_ request: URLRequest, in context: StageContext) throws(TransferError) -> RequestStep?
    func process(_ request: URLRequest, in context: StageContext) async throws(TransferError) -> RequestStep
}

/// One step of the response side; same contract as ``RequestStage``.
protocol ResponseStage: Sendable {
    func immediate(_ response: URLResponse, in context: StageContext) throws(TransferError) -> ResponseStep?
    func process(_ response: URLResponse, in context: StageContext) async throws(TransferError) -> ResponseStep
    /// Whether the stage surely lets `response` through unchanged, judged from `facts` alone, before any
    /// ``StageContext`` is made (see ``StageChain/responseSidePasses(_:_:)``). May answer `false` when unsure;
    /// never `true` when ``immediate(_:in:)`` would answer anything but `.proceed(response)`. Each stage's
    /// `immediate` starts with this check, so the two cannot drift apart.
    static func passes(_ response: URLResponse, _ facts: ResponseStageFacts) -> Bool
}

extension RequestStage {
    /// A stage that never waits.
    func process(_ request: URLRequest, in context: StageContext) async throws(TransferError) -> RequestStep {
        try immediate(request, in: context) ?? .proceed(request)
    }
}

extension ResponseStage {
    /// A stage that does not say when it has nothing to do: the chain always runs it.
    static func passes(_ response: URLResponse, _ facts: ResponseStageFacts) -> Bool { false }

    /// A stage that never waits.
    func process(_ response: URLResponse, in context: StageContext) async throws(TransferError) -> ResponseStep {
        try immediate(response, in: context) ?? .proceed(response)
    }
}

/// What stages may know and ask about the task they work for.
struct StageContext: Sendable {
    /// The session's configuration.
    let configuration: URLSessionConfiguration
    /// What the request stages read from it, read once per session.
    let settings: StageSettings
    /// The task object, for `URLProtocol.canInit(with:)`; `nil` where the engine runs without one.
    let task: URLSessionTask?
    /// The request the task is loading (before this attempt's stages).
    let currentRequest: URLRequest
    /// Redirects followed so far.
    let redirectCount: Int
    /// Whether the app is asked about redirects (a task or session delegate exists).
    let asksForRedirects: Bool
    /// Whether the app decides on each response (a data task with a delegate).
    let asksForResponses: Bool
    /// Who answers the stages' questions (the engine, which asks the app).
    let decider: any TaskDecider
    /// The task's HTTP authentication so far (see ``AuthenticationStage``): made by the engine at the task's first
    /// 401, so that other tasks carry no such object.
    var authentication: AuthenticationState? = nil
    /// The Basic spaces the session authenticated in, for preemptive credentials (see ``CredentialStage``).
    var authenticatedSpaces: AuthenticatedSpaces? = nil
    /// An upload task's body, which the request does not carry (Digest `auth-int` hashes it).
    var uploadBody: UploadBody? = nil
    /// The task's HTTP caching (see ``CacheLookupStage`` and ``CacheStorageStage``); `nil` without a `urlCache`
    /// and for download tasks, whose bodies Darwin never caches.
    var cache: CacheTransaction? = nil
    /// Where the response the response side runs over came from: only the network's is stored in the cache (see
    /// ``CacheStorageStage``), and the cache's stored `Set-Cookie` fields are not stored again (see
    /// ``CookieStorageStage``).
    var responseOrigin: TransactionRecord.Origin = .network
    /// The request a custom `URLProtocol` was redirected to (`wasRedirectedTo:`), for the redirect stage.
    var protocolRedirect: URLRequest? = nil
    /// The `Authorization` field this attempt's request went out with: ``currentRequest`` does not show one that
    /// ``CredentialStage`` sent ahead, which ``AuthenticationStage`` must count as tried when it draws a 401.
    var sentAuthorization: String? = nil
    /// The credential fields the engine wrote to answer challenges, which the app never sees (see
    /// ``RedirectStage``); `nil` when there are none.
    var answeredCredentials: AnsweredCredentials? = nil

    /// Asks the app; waits for the answer (`nil` when the task ends first).
    func decide(_ decision: TaskDecision) async -> TaskDecisionAnswer? {
        await decider.decide(decision)
    }
}

/// Answers a stage's ``TaskDecision`` (the engine emits it to the app and waits). A protocol rather than a closure,
/// so that making a ``StageContext`` for every attempt allocates nothing.
protocol TaskDecider: Sendable {
    func decide(_ decision: TaskDecision) async -> TaskDecisionAnswer?
}
