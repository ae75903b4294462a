import CourierHTTP
import CourierTransport
import Foundation
import Logging
import NIOConcurrencyHelpers

/// An object that coordinates a group of related network data transfer tasks — Apple's `URLSession`, on
/// SwiftNIO.
///
/// A session copies its configuration when it is created, holds its delegate strongly until it is
/// invalidated, and calls the delegate and every completion handler on its ``delegateQueue``, one call at a
/// time, in order.
open class URLSession: NSObject, @unchecked Sendable {
    /// The shared session: default configuration, no delegate. Invalidating it does nothing.
    public static let shared: URLSession = URLSession(
        configuration: .default,
        delegate: nil,
        delegateQueue: nil,
        isShared: true
    )

    private let storedConfiguration: URLSessionConfiguration
    private let delegateBox: NIOLockedValueBox<(any URLSessionDelegate)?>
    private let descriptionBox = NIOLockedValueBox<String?>(nil)
    /// The queue on which delegate methods and completion handlers run.
    public let delegateQueue: OperationQueue
    let isShared: Bool
    let dispatcher: DelegateDispatcher
    let transport: HTTPTransport
    let registry = TaskRegistry()
    let logger: Logger
    /// TLS settings derived once from the configuration (it never changes after the session is created).
    let tlsSettings: TLSSettings

    /// A copy of the configuration the session was created with: changing it does not change the session.
    public var configuration: URLSessionConfiguration {
        storedConfiguration.copy() as? URLSessionConfiguration ?? storedConfiguration
    }

    /// The session's delegate; `nil` after the session became invalid.
    public var delegate: (any URLSessionDelegate)? { delegateBox.withLockedValue { $0 } }

    /// A description of the session, for debugging.
    public var sessionDescription: String? {
        get { descriptionBox.withLockedValue { $0 } }
        set { descriptionBox.withLockedValue { $0 = newValue } }
    }

    /// Creates a session with `configuration` and no delegate.
    public convenience init(configuration: URLSessionConfiguration) {
        self.init(configuration: configuration, delegate: nil, delegateQueue: nil, isShared: false)
    }

    /// Creates a session. A `nil` queue means a new serial `OperationQueue`.
    public convenience init(
        configuration: URLSessionConfiguration,
        delegate: (any URLSessionDelegate)?,
        delegateQueue queue: OperationQueue?
    ) {
        self.init(configuration: configuration, delegate: delegate, delegateQueue: queue, isShared: false)
    }

    private init(
        configuration: URLSessionConfiguration,
        delegate: (any URLSessionDelegate)?,
        delegateQueue queue: OperationQueue?,
        isShared: Bool
    ) {
        let copied = configuration.copy() as? URLSessionConfiguration ?? configuration
        self.storedConfiguration = copied
        self.delegateBox = NIOLockedValueBox(delegate)
        let delegateQueue: OperationQueue
        if let queue {
            delegateQueue = queue
        } else {
            delegateQueue = OperationQueue()
            delegateQueue.maxConcurrentOperationCount = 1
            delegateQueue.name = "courier.session.delegate"
        }
        self.delegateQueue = delegateQueue
        self.isShared = isShared
        self.dispatcher = DelegateDispatcher(queue: delegateQueue)
        self.logger = Logger(label: "courier.session")
        self.tlsSettings = TransportRequestBuilder.tlsSettings(copied)
        self.transport = HTTPTransport(
            configuration: .init(maximumConnectionsPerHost: copied.httpMaximumConnectionsPerHost),
            logger: Logger(label: "courier.transport")
        )
        super.init()
        // Partial files of resume data never used would otherwise stay forever.
        DownloadDirectory.sweepInBackground(copied.courierDownloadDirectory)
    }

    /// The configuration as the session uses it (not a copy; never mutated).
    var sessionConfiguration: URLSessionConfiguration { storedConfiguration }

    // MARK: - Invalidation

    /// Lets running tasks finish, refuses new ones, then calls `urlSession(_:didBecomeInvalidWithError:)`.
    /// Does nothing on ``shared``.
    open func finishTasksAndInvalidate() {
        guard !isShared else { return }
        if registry.invalidate() {
            becomeInvalid()
        }
    }

    /// Cancels every task, refuses new ones, then calls `urlSession(_:didBecomeInvalidWithError:)`.
    /// Does nothing on ``shared``.
    open func invalidateAndCancel() {
        guard !isShared else { return }
        let becameEmpty = registry.invalidate()
        for task in registry.allTasks() {
            task.cancel()
        }
        if becameEmpty {
            becomeInvalid()
        }
    }

    /// Called when the last task of an invalidated session ended.
    func becomeInvalid() {
        transport.shutdown()
        dispatcher.async { [self] in
            delegate?.urlSession(self, didBecomeInvalidWithError: nil)
            // The session releases its delegate once the delegate was told.
            delegateBox.withLockedValue { $0 = nil }
        }
    }

    // MARK: - Task lists

    /// The tasks a session lists, as Darwin does: resumed at least once, and neither cancelled nor completed.
    private func outstandingTasks() -> [URLSessionTask] {
        registry.allTasks().filter(\.isOutstanding)
    }

    /// Calls `completionHandler` on the delegate queue with the session's outstanding tasks (resumed at least
    /// once, not cancelled, not completed), by kind.
    open func getTasksWithCompletionHandler(
        _ completionHandler:
            @escaping @Sendable ([URLSessionDataTask], [URLSessionUploadTask], [URLSessionDownloadTask])
            -> Void
    ) {
        let tasks = outstandingTasks()
        dispatcher.async {
            let uploads = tasks.compactMap { $0 as? URLSessionUploadTask }
            let data = tasks.compactMap { $0 as? URLSessionDataTask }.filter { !($0 is URLSessionUploadTask) }
            let downloads = tasks.compactMap { $0 as? URLSessionDownloadTask }
            completionHandler(data, uploads, downloads)
        }
    }

    /// Calls `completionHandler` on the delegate queue with all outstanding tasks (resumed at least once, not
    /// cancelled, not completed).
    open func getAllTasks(completionHandler: @escaping @Sendable ([URLSessionTask]) -> Void) {
        let tasks = outstandingTasks()
        dispatcher.async { completionHandler(tasks) }
    }

    /// The session's outstanding tasks (resumed at least once, not cancelled, not completed).
    open var allTasks: [URLSessionTask] {
        get async { outstandingTasks() }
    }

    /// The session's outstanding tasks, by kind.
    open var tasks: ([URLSessionDataTask], [URLSessionUploadTask], [URLSessionDownloadTask]) {
        get async {
            let tasks = outstandingTasks()
            let uploads = tasks.compactMap { $0 as? URLSessionUploadTask }
            let data = tasks.compactMap { $0 as? URLSessionDataTask }.filter { !($0 is URLSessionUploadTask) }
            let downloads = tasks.compactMap { $0 as? URLSessionDownloadTask }
            return (data, uploads, downloads)
        }
    }

    /// Empties cookies, credentials and cache of the session's storages, and closes idle connections.
    open func reset(completionHandler: @escaping @Sendable () -> Void) {
        storedConfiguration.urlCache?.removeAllCachedResponses()
        if let cookies = storedConfiguration.httpCookieStorage?.cookies {
            for cookie in cookies { storedConfiguration.httpCookieStorage?.deleteCookie(cookie) }
        }
        dispatcher.async { completionHandler() }
    }

    /// Flushes storages to disk (they are in memory in this release) and calls `completionHandler`.
    open func flush(completionHandler: @escaping @Sendable () -> Void) {
        dispatcher.async { completionHandler() }
    }
}
