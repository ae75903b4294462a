import Foundation

#if canImport(Courier)
    import Courier
#elseif canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A closure for every delegate event (AFNetworking's `set…Block:` methods). A hook that answers a question (a
/// challenge, a redirect, a response, a cache) decides when set; otherwise the manager's default applies (default
/// handling, follow, allow, store). Hooks for events are told in addition to the per-task bookkeeping. They run on
/// the manager's ``SessionManager/operationQueue``.
public struct SessionManagerHooks: Sendable {
    /// What a challenge hook answers: the disposition and, for `.useCredential`, the credential.
    public typealias ChallengeAnswer = (URLSession.AuthChallengeDisposition, URLCredential?)

    /// `setSessionDidBecomeInvalidBlock:`.
    public var sessionDidBecomeInvalid: (@Sendable (URLSession, (any Error)?) -> Void)?
    /// `setSessionDidReceiveAuthenticationChallengeBlock:`: connection-level challenges (server trust, client
    /// certificate). When set it answers them all and the ``SessionManager/securityPolicy`` is not used; without it
    /// they go to the task level, as in AFNetworking.
    public var sessionDidReceiveChallenge: (@Sendable (URLSession, URLAuthenticationChallenge) -> ChallengeAnswer)?
    /// `setTaskWillPerformHTTPRedirectionBlock:`: the request to follow, or `nil` to stop.
    public var taskWillPerformHTTPRedirection:
        (@Sendable (URLSession, URLSessionTask, HTTPURLResponse, URLRequest) -> URLRequest?)?
    /// `setTaskDidReceiveAuthenticationChallengeBlock:`: task-level challenges (401, 407) and, without a
    /// ``sessionDidReceiveChallenge`` hook, the connection-level ones of the task's connection. A server-trust
    /// challenge it answers with `.performDefaultHandling` is left to the ``SessionManager/securityPolicy``, as in
    /// AFNetworking.
    public var taskDidReceiveChallenge:
        (@Sendable (URLSession, URLSessionTask, URLAuthenticationChallenge) -> ChallengeAnswer)?
    /// `setTaskNeedNewBodyStreamBlock:`: the body stream for a streamed upload, or for sending a stream body again.
    public var taskNeedNewBodyStream: (@Sendable (URLSession, URLSessionTask) -> InputStream?)?
    /// `setTaskDidSendBodyDataBlock:`: bytes sent, total sent, total expected.
    public var taskDidSendBodyData: (@Sendable (URLSession, URLSessionTask, Int64, Int64, Int64) -> Void)?
    /// `setTaskDidCompleteBlock:`.
    public var taskDidComplete: (@Sendable (URLSession, URLSessionTask, (any Error)?) -> Void)?
    /// `setTaskDidFinishCollectingMetricsBlock:`.
    public var taskDidFinishCollectingMetrics: (@Sendable (URLSession, URLSessionTask, URLSessionTaskMetrics) -> Void)?
    /// `setDataTaskDidReceiveResponseBlock:`: the disposition.
    public var dataTaskDidReceiveResponse:
        (@Sendable (URLSession, URLSessionDataTask, URLResponse) -> URLSession.ResponseDisposition)?
    /// `setDataTaskDidBecomeDownloadTaskBlock:`.
    public var dataTaskDidBecomeDownloadTask:
        (@Sendable (URLSession, URLSessionDataTask, URLSessionDownloadTask) -> Void)?
    /// `setDataTaskDidReceiveDataBlock:`.
    public var dataTaskDidReceiveData: (@Sendable (URLSession, URLSessionDataTask, Data) -> Void)?
    /// `setDataTaskWillCacheResponseBlock:`: the response to store, or `nil`.
    public var dataTaskWillCacheResponse:
        (@Sendable (URLSession, URLSessionDataTask, CachedURLResponse) -> CachedURLResponse?)?
    /// `setDownloadTaskDidFinishDownloadingBlock:`: where to move the file, or `nil` to leave it to the task's
    /// destination.
    public var downloadTaskDidFinishDownloading: (@Sendable (URLSession, URLSessionDownloadTask, URL) -> URL?)?
    /// `setDownloadTaskDidWriteDataBlock:`: bytes written, total written, total expected.
    public var downloadTaskDidWriteData: (@Sendable (URLSession, URLSessionDownloadTask, Int64, Int64, Int64) -> Void)?
    /// `setDownloadTaskDidResumeBlock:`: offset, total expected.
    public var downloadTaskDidResume: (@Sendable (URLSession, URLSessionDownloadTask, Int64, Int64) -> Void)?
    /// `setDidFinishEventsForBackgroundURLSessionBlock:`.
    public var didFinishEventsForBackgroundSession: (@Sendable (URLSession) -> Void)?

    /// No hooks.
    public init() {}
}

extension Notification.Name {
    /// A task was resumed through the manager (AFNetworkingTaskDidResumeNotification; see
    /// ``SessionManager/resume(_:)``); the object is the task.
    public static let courierManagerTaskDidResume = Notification.Name("com.courier.networking.task.resume")
    /// A task was suspended through the manager (AFNetworkingTaskDidSuspendNotification); the object is the task.
    public static let courierManagerTaskDidSuspend = Notification.Name("com.courier.networking.task.suspend")
    /// A task the manager made completed (AFNetworkingTaskDidCompleteNotification); the object is the task, the user
    /// info holds ``SessionManager/NotificationKey`` values.
    public static let courierManagerTaskDidComplete = Notification.Name("com.courier.networking.task.complete")
    /// The manager's session was invalidated (AFURLSessionDidInvalidateNotification); the object is the session.
    public static let courierManagerSessionDidInvalidate = Notification.Name(
        "com.courier.networking.session.invalidate")
    /// A finished download could not be moved to its destination
    /// (AFURLSessionDownloadTaskDidFailToMoveFileNotification); the object is the task, the user info's
    /// ``SessionManager/NotificationKey/error`` the move's error.
    public static let courierManagerDownloadDidFailToMoveFile = Notification.Name(
        "com.courier.networking.session.download.file-manager-error")
}

extension SessionManager {
    /// The user info keys of ``Foundation/Notification/Name/courierManagerTaskDidComplete``
    /// (AFNetworkingTaskDidComplete…Key).
    public enum NotificationKey {
        /// The body received (data tasks).
        public static let responseData = "com.courier.networking.complete.responsedata"
        /// The serialized response object.
        public static let serializedResponse = "com.courier.networking.complete.serializedresponse"
        /// The response serializer used.
        public static let responseSerializer = "com.courier.networking.complete.responseserializer"
        /// A download's file.
        public static let assetPath = "com.courier.networking.complete.assetpath"
        /// The task's or the serializer's error.
        public static let error = "com.courier.networking.complete.error"
        /// The task's `URLSessionTaskMetrics`, when collected.
        public static let metrics = "com.courier.networking.complete.sessiontaskmetrics"
    }
}
