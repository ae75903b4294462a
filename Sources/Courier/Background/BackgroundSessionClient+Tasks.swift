import CourierHTTP
import Foundation

/// What the tasks of a background session ask of the daemon: creation at the first `resume()`, suspension,
/// resumption and cancellation; and the task objects made for transfers an earlier process started.
extension BackgroundSessionClient {
    /// Why `task` cannot run in a background session, as Darwin refuses it there (Darwin raises an exception;
    /// Courier fails the task with `unsupportedURL` and Darwin's words), or `nil`.
    static func unsupportedReason(for task: URLSessionTask) -> String? {
        switch task.completionMode {
        case .delegate:
            break
        case .dataHandler, .downloadHandler:
            return "Completion handler blocks are not supported in background sessions. Use a delegate instead."
        case .collect, .stream, .downloadCollect:
            return "async calls (data(for:), download(for:), bytes(for:)) are not supported in background sessions"
        }
        if let upload = task as? URLSessionUploadTask {
            if case .file = upload.uploadBody { return nil }
            return "Upload tasks from NSData or a stream are not supported in background sessions; upload from a file"
        }
        if task is URLSessionDownloadTask { return nil }
        return "Data tasks are not supported in background sessions; use a download task"
    }

    /// Starts `task` in the daemon (its first `resume()`); its events go to `adapter`.
    func start(_ task: URLSessionTask, adapter: TaskEventAdapter, configuration: URLSessionConfiguration) {
        let url = task.originalRequest?.url
        if let reason = Self.unsupportedReason(for: task) {
            adapter.receive(.completed(Self.failure(.unsupportedURL(reason), url: url)))
            return
        }
        if let failure {
            adapter.receive(.completed(Self.failure(failure, url: url)))
            return
        }
        let kind: BackgroundTaskSpec.Kind
        if let upload = task as? URLSessionUploadTask, case .file(let file) = upload.uploadBody {
            kind = .uploadFile(file.path)
        } else {
            kind = .download
        }
        let resumeData = (task as? URLSessionDownloadTask)?.resume?.resumeData.flatMap { try? $0.encoded() }
        if (task as? URLSessionDownloadTask)?.resume != nil && resumeData == nil {
            let reason = (task as? URLSessionDownloadTask)?.resume?.error
            adapter.receive(
                .completed(Self.failure(reason ?? .unsupportedURL("the resume data cannot be used"), url: url)))
            return
        }
        let spec = BackgroundTaskSpec(
            task: task.taskIdentifier,
            kind: kind,
            request: CodableRequest(task.originalRequest ?? URLRequest(url: URL(fileURLWithPath: "/"))),
            resumeData: resumeData,
            earliestBeginDate: task.earliestBeginDate,
            countOfBytesClientExpectsToReceive: task.countOfBytesClientExpectsToReceive,
            settings: Self.settings(configuration, for: task.originalRequest?.url),
            taskDescription: task.taskDescription
        )
        bind(Binding(task: task, adapter: adapter, spec: spec))
        guard send(.create(spec)) else {
            // The daemon is away (restarting): the task is not left waiting for a transfer nobody runs.
            unbind(task.taskIdentifier)
            adapter.receive(
                .completed(
                    Self.failure(
                        .urlError(.backgroundSessionWasDisconnected, "courierd could not be reached to start the task"),
                        url: url)))
            return
        }
    }

    /// The configuration values that travel with a task to `url`.
    static func settings(_ configuration: URLSessionConfiguration, for url: URL?) -> BackgroundTransferSettings {
        // Read as the in-process session reads them: a number value is sent as its description, not dropped.
        let headers = configuration.additionalHeaderPairs.map { [$0.0, $0.1] }
        var settings = BackgroundTransferSettings(
            timeoutIntervalForRequest: configuration.timeoutIntervalForRequest,
            timeoutIntervalForResource: configuration.timeoutIntervalForResource,
            additionalHeaders: headers,
            isDiscretionary: configuration.isDiscretionary,
            allowsExpensiveNetworkAccess: configuration.allowsExpensiveNetworkAccess
        )
        settings.additionalTrustedCertificates = configuration.courierAdditionalTrustedCertificates
        settings.tlsMinimumVersion = configuration.tlsMinimumSupportedProtocolVersion.rawValue
        settings.tlsMaximumVersion = configuration.tlsMaximumSupportedProtocolVersion.rawValue
        settings.allowsHTTP2 = configuration.courierAllowsHTTP2
        settings.maximumConnectionsPerHost = configuration.httpMaximumConnectionsPerHost
        // The daemon's session had the default guard whatever the app set: a download the app turned the guard off
        // for failed, and one it lowered the limit for was held to the default.
        settings.maximumDecompressionRatio = configuration.courierMaximumDecompressionRatio ?? 0
        settings.credentialFile = configuration.urlCredentialStorage?.persistentFile?.path
        if let proxies = configuration.connectionProxyDictionary {
            settings.proxyDictionary = proxyJSON(proxies)
        } else {
            // What a session of the app reads from its environment (see `StageSettings`), for the daemon to use.
            let environment = configuration.backgroundEnvironment ?? ProcessInfo.processInfo.environment
            var variables: [String: String] = [:]
            for name in ProxyRules.environmentVariableNames {
                if let value = environment[name] { variables[name] = value }
            }
            settings.proxyEnvironment = variables
        }
        if configuration.httpShouldSetCookies, let storage = configuration.httpCookieStorage {
            settings.usesCookies = true
            settings.cookieAcceptPolicy = configuration.httpCookieAcceptPolicy.rawValue
            settings.cookieJarFolder = storage.persistentFolder?.path
            // The jar is written in the background: the daemon must find the cookies set just before.
            if settings.cookieJarFolder != nil { storage.flushToDisk() }
            let inMemory = url.flatMap { storage.cookies(for: $0) } ?? []
            settings.cookies = inMemory.filter { settings.cookieJarFolder == nil || $0.isSessionOnly }.compactMap {
                CookieJarFile.encode($0)
            }
        }
        return settings
    }

    /// `connectionProxyDictionary` as JSON, with its string keys and property-list values (others are left out).
    private static func proxyJSON(_ proxies: [AnyHashable: Any]) -> Data? {
        var plain: [String: Any] = [:]
        for (key, value) in proxies {
            guard let key = key.base as? String else { continue }
            if let value = value as? String {
                plain[key] = value
            } else if let value = value as? Bool {
                plain[key] = value
            } else if let value = value as? Int {
                plain[key] = value
            } else if let value = value as? [String] {
                plain[key] = value
            }
        }
        return try? JSONSerialization.data(withJSONObject: plain, options: [.sortedKeys])
    }

    private static func failure(_ error: TransferError, url: URL?) -> TaskResult {
        TaskResult(error: URLErrorMapping.urlError(from: error, failingURL: url), file: nil, resumeData: nil)
    }

    /// Makes task objects for the daemon's tasks this process does not have (started by an earlier process), so
    /// that `getAllTasks` lists them and their events reach the delegate. When `reattaching` (the same process, after
    /// the daemon restarted), a completed task it does not have is one whose completion it already handled (the
    /// acknowledgement did not reach the daemon): its replayed event is acknowledged, and no task is made for it.
    func adopt(_ snapshots: [BackgroundTaskSnapshot], in session: URLSession, reattaching: Bool = false) {
        for snapshot in snapshots where binding(for: snapshot.task) == nil {
            if reattaching && snapshot.state == .completed { continue }
            let request = snapshot.originalRequest.request
            let task: URLSessionTask
            switch snapshot.kind {
            case .download:
                task = URLSessionDownloadTask(
                    session: session, request: request, identifier: snapshot.task, completionMode: .delegate)
            case .uploadFile(let path):
                task = URLSessionUploadTask(
                    session: session, request: request, identifier: snapshot.task, completionMode: .delegate,
                    uploadBody: .file(URL(fileURLWithPath: path)))
            }
            let adapter = TaskEventAdapter(task: task)
            task.adoptBackgroundTransfer(adapter: adapter, suspended: snapshot.state == .suspended)
            task.taskDescription = snapshot.taskDescription
            task.update { state in
                state.countOfBytesReceived = snapshot.bytesReceived
                state.countOfBytesExpectedToReceive = snapshot.bytesExpectedToReceive
                state.response = snapshot.response?.response
            }
            bind(Binding(task: task, adapter: adapter))
            _ = session.registry.insert(task)
        }
    }
}
