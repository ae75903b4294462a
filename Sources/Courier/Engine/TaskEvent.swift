import CourierHTTP
import CourierTransport
import Foundation

/// What the engine tells the outside world about one task, as data, in order.
///
/// The engine emits events to a ``TaskEventSink``; the in-process sink (``TaskEventAdapter``) turns them into
/// delegate calls and completion handlers. Decisions (``decide(_:)``) are events too: the engine waits for the
/// answer to come back through ``TaskEngine/answer(_:)``.
enum TaskEvent: Sendable {
    /// An attempt goes to the network with a body of this many bytes (or `NSURLSessionTransferSizeUnknown`).
    case attemptStarted(expectedToSend: Int64)
    /// Request body bytes were written.
    case sentBodyData(bytesSent: Int64, totalBytesSent: Int64)
    /// The request being loaded changed (a followed redirect, a delayed request the app replaced).
    case currentRequest(URLRequest)
    /// The engine needs the app's answer before it goes on.
    case decide(TaskDecision)
    /// No network path leads to the host; the task waits for one (`waitsForConnectivity`). Once per task.
    case waitingForConnectivity
    /// The app turned the data task into a download task (`.becomeDownload`): the body goes to a file from here.
    case becameDownload
    /// The app turned the data task into a stream task (`.becomeStream`): the switched connection is handed over.
    case becameStream
    /// A 1xx response (other than 100 and 101) came before the final one, e.g. 103 Early Hints.
    case informationalResponse(HTTPURLResponse)
    /// The final response, accepted: body bytes follow.
    case response(URLResponse)
    /// Body bytes for the consumer (data tasks: delegate, completion handler or async bytes).
    case data(Data)
    /// Body bytes went to the download file (download tasks); `total` counts all received so far.
    case receivedToFile(count: Int, total: Int64)
    /// A resumed download continues at `offset` (0 when it starts over).
    case downloadResumed(offset: Int64, expectedTotal: Int64)
    /// Bytes reached the download file.
    case downloadWrote(bytes: Int64, totalWritten: Int64, totalExpected: Int64)
    /// One exchange's timeline (observers only).
    case timeline(TransportTimeline)
    /// The task's transactions, for `didFinishCollecting`: emitted just before `completed`, and only to a sink that
    /// ``TaskEventSink/collectsMetrics``.
    case metrics(TaskMetricsRecord)
    /// The task is over. Emitted exactly once, last.
    case completed(TaskResult)
}

/// A question for the app.
enum TaskDecision: Sendable {
    /// `willBeginDelayedRequest`: the `earliestBeginDate` arrived.
    case beginDelayedRequest(URLRequest)
    /// `willPerformHTTPRedirection`: follow `newRequest`, another request, or none.
    case redirect(HTTPURLResponse, newRequest: URLRequest)
    /// `didReceive response`: allow, cancel or become a download.
    case response(URLResponse)
    /// `didReceive challenge`: a 401 or 407 asks for credentials.
    case authenticate(AuthenticationQuestion)
    /// `willCacheResponse`: store this, another response, or nothing.
    case willCacheResponse(CachedURLResponse)
}

/// The app's answer to a ``TaskDecision``.
enum TaskDecisionAnswer: Sendable {
    case beginDelayedRequest(URLSession.DelayedRequestDisposition, URLRequest?)
    case redirect(URLRequest?)
    case response(URLSession.ResponseDisposition)
    case authenticate(URLSession.AuthChallengeDisposition, AuthenticationQuestion.Credential?)
    case willCacheResponse(CachedURLResponse?)
}

/// How a task ended.
struct TaskResult: Sendable {
    /// `nil` on success.
    var error: URLError?
    /// A download task's file, on success (the consumer owns it from here).
    var file: URL?
    /// Resume data, when the download can be resumed (also inside `error`'s user info).
    var resumeData: Data?
    /// The error the app is given instead of `error`: a custom `URLProtocol`'s own failure, unchanged.
    var reportedError: (any Error)?

    /// The error the app sees.
    var appError: (any Error)? { error.map { reportedError ?? $0 } }
}

/// Receives a task's events, in order, on the engine's executor. An implementation must return quickly, never
/// block and never call user code directly (it queues that on the delegate queue).
protocol TaskEventSink: AnyObject, Sendable {
    func receive(_ event: TaskEvent)
    /// Whether the consumer wants the source paused now (its buffer is full); asked on the engine's executor.
    var wantsSourcePaused: Bool { get }
    /// Whether the engine records the task's transactions (asked once, when the task starts): metrics cost nothing
    /// when nobody receives them.
    var collectsMetrics: Bool { get }
}

/// What the engine asks of the task it runs, besides sending it events: whether the app has it suspended, and a new
/// body stream (`needNewBodyStream`, user code, asked on the delegate queue).
protocol TaskHost: AnyObject, Sendable {
    var isSuspended: Bool { get }
    func askForNewBodyStream() async -> InputStream?
}
