import CourierHTTP
import Foundation

// The messages between a background session and `courierd`, as JSON in length-prefixed frames over the daemon's
// Unix domain socket (``FrameChannel``). The app sends ``BackgroundRequest``s; the daemon answers with
// ``BackgroundReply``s and sends events as the transfers run.
//
// An app and a daemon of different Courier versions may meet (the daemon outlives the app that started it), and
// the journal keeps these values across versions: a field added later is optional or decoded with a default, so
// older peers and rows still decode (JSON keys they do not know are ignored). A new request, reply or event case
// needs a version check before it is sent.

/// What an app (or the `courier` command) asks of the daemon.
package enum BackgroundRequest: Codable, Sendable, Equatable {
    /// Attach to a session identifier: only one process at a time. The daemon answers `.attached` (then replays
    /// the events the app has not received and, once the tasks of an earlier process have all ended,
    /// `.eventsDrained`) or `.refused`. `reattaching`: the same session again after the daemon restarted (it knows
    /// its tasks; nothing is owed to an earlier process).
    case attach(identifier: String, processID: Int32, reattaching: Bool, launch: BackgroundLaunch?)
    /// Create a task in the attached session and start it (the app's first `resume()`).
    case create(BackgroundTaskSpec)
    case resume(task: Int)
    case suspend(task: Int)
    case cancel(task: Int, producingResumeData: Bool)
    /// The app's delegate received the journaled event `sequence`: the daemon forgets it (and its file).
    case delivered(sequence: Int64)
    /// The app's delegate answered the challenge `id`.
    case answer(challenge: UInt64, BackgroundChallengeAnswer)
    /// The tasks of one identifier, or of all (`courier queue list`); no attachment needed.
    case list(identifier: String?)
    /// Cancel one task of any identifier (`courier queue cancel`); no attachment needed.
    case cancelQueued(identifier: String, task: Int)
    /// The daemon's process identifier and counts.
    case status
    /// Ask the daemon to exit (it continues every unfinished transfer when it starts again).
    case stop
}

/// What the daemon sends to a client.
package enum BackgroundReply: Codable, Sendable, Equatable {
    /// The session is attached; task identifiers the app makes start at `nextTaskIdentifier`; `tasks` are the
    /// session's unfinished tasks and the finished ones whose events the app has not received.
    case attached(nextTaskIdentifier: Int, tasks: [BackgroundTaskSnapshot])
    /// The request was refused; `code` is a `URLError.Code` raw value.
    case refused(code: Int, reason: String)
    case event(BackgroundEvent)
    /// A task met an authentication challenge: the app's delegate is asked (the transfer waits for `.answer`, up to
    /// a minute, then default handling).
    case challenge(BackgroundChallenge)
    /// Every event queued while no app was attached has been sent.
    case eventsDrained
    case listed([BackgroundTaskSnapshot])
    case status(processID: Int32, tasks: Int, clients: Int)
}

/// What `courierd` runs when a session's task ends with no process attached (`sessionSendsLaunchEvents` and
/// `courierBackgroundLaunchCommand`).
package struct BackgroundLaunch: Codable, Sendable, Equatable {
    /// An absolute executable path, then its arguments; empty: nothing runs.
    package var command: [String]

    /// What a session registers when it attaches: its command; an empty one when it turned launch events off, so
    /// that the daemon forgets a command an earlier launch of the app registered; `nil` when it names no command but
    /// does not refuse launches either (`courier queue wait`, the usual command itself), which keeps the registered
    /// one.
    package init?(command: [String]?, sendsLaunchEvents: Bool) {
        guard sendsLaunchEvents else {
            self.command = []
            return
        }
        guard let command, let executable = command.first, executable.hasPrefix("/") else { return nil }
        self.command = command
    }
}

/// The configuration values a background task carries to the daemon (the rest of the configuration has no meaning
/// out of the app's process: delegates, protocol classes). The storages travel by where they keep things: a
/// persistent cookie jar or credential file is opened by the daemon too; an in-memory storage's cookies for the
/// request's URL go with the task.
///
/// Compatibility: these values are journaled and cross the socket between an app and a daemon that may be of other
/// Courier versions, so every field added later is optional or decoded with its default when absent.
package struct BackgroundTransferSettings: Codable, Sendable, Equatable {
    package var timeoutIntervalForRequest: TimeInterval
    package var timeoutIntervalForResource: TimeInterval
    /// `httpAdditionalHeaders` with string names and values.
    package var additionalHeaders: [[String]]
    package var isDiscretionary: Bool
    package var allowsExpensiveNetworkAccess: Bool
    /// `courierAdditionalTrustedCertificates` (DER).
    package var additionalTrustedCertificates: [Data] = []
    /// `tlsMinimumSupportedProtocolVersion` and `tlsMaximumSupportedProtocolVersion` raw values.
    package var tlsMinimumVersion: UInt16?
    package var tlsMaximumVersion: UInt16?
    package var allowsHTTP2 = true
    package var maximumConnectionsPerHost = 6
    /// Whether the configuration has an `httpCookieStorage` and `httpShouldSetCookies`.
    package var usesCookies = false
    /// `httpCookieAcceptPolicy`'s raw value.
    package var cookieAcceptPolicy = HTTPCookie.AcceptPolicy.onlyFromMainDocumentDomain.rawValue
    /// The folder of the app's persistent cookie jar (`HTTPCookieStorage.shared`'s or a group's): the daemon's
    /// attempt reads and writes the same jar.
    package var cookieJarFolder: String?
    /// The cookies of the app's storage for the request's URL that the jar does not hold (session cookies, or all of
    /// an in-memory storage's), each as the jar encodes it.
    package var cookies: [Data] = []
    /// The file of the app's persistent `urlCredentialStorage` (`URLCredentialStorage.shared`'s): the daemon's
    /// default handling of a challenge uses the credentials stored there.
    package var credentialFile: String?
    /// `connectionProxyDictionary` with string keys, as JSON.
    package var proxyDictionary: Data?
    /// Without a `connectionProxyDictionary`, the app's proxy variables (``ProxyRules/environmentVariableNames``):
    /// the daemon's own environment is another process's (the first app that started it, or systemd's), and a
    /// task the app meant for its proxy must not go direct, nor through a proxy the app never named. `nil` from an
    /// app of an earlier version, whose tasks keep the daemon's environment.
    package var proxyEnvironment: [String: String]?
    /// `courierMaximumDecompressionRatio`, with 0 for `nil` (the guard turned off): a missing value is an app of an
    /// earlier version, whose tasks keep the default guard, and must not read as "off".
    package var maximumDecompressionRatio = ContentCoding.defaultMaximumDecompressionRatio

    package init(
        timeoutIntervalForRequest: TimeInterval, timeoutIntervalForResource: TimeInterval,
        additionalHeaders: [[String]] = [], isDiscretionary: Bool = false, allowsExpensiveNetworkAccess: Bool = true
    ) {
        self.timeoutIntervalForRequest = timeoutIntervalForRequest
        self.timeoutIntervalForResource = timeoutIntervalForResource
        self.additionalHeaders = additionalHeaders
        self.isDiscretionary = isDiscretionary
        self.allowsExpensiveNetworkAccess = allowsExpensiveNetworkAccess
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        timeoutIntervalForRequest = try container.decode(TimeInterval.self, forKey: .timeoutIntervalForRequest)
        timeoutIntervalForResource = try container.decode(TimeInterval.self, forKey: .timeoutIntervalForResource)
        additionalHeaders = try container.decodeIfPresent([[String]].self, forKey: .additionalHeaders) ?? []
        isDiscretionary = try container.decodeIfPresent(Bool.self, forKey: .isDiscretionary) ?? false
        allowsExpensiveNetworkAccess =
            try container.decodeIfPresent(Bool.self, forKey: .allowsExpensiveNetworkAccess) ?? true
        additionalTrustedCertificates =
            try container.decodeIfPresent([Data].self, forKey: .additionalTrustedCertificates) ?? []
        tlsMinimumVersion = try container.decodeIfPresent(UInt16.self, forKey: .tlsMinimumVersion)
        tlsMaximumVersion = try container.decodeIfPresent(UInt16.self, forKey: .tlsMaximumVersion)
        allowsHTTP2 = try container.decodeIfPresent(Bool.self, forKey: .allowsHTTP2) ?? true
        maximumConnectionsPerHost = try container.decodeIfPresent(Int.self, forKey: .maximumConnectionsPerHost) ?? 6
        usesCookies = try container.decodeIfPresent(Bool.self, forKey: .usesCookies) ?? false
        cookieAcceptPolicy =
            try container.decodeIfPresent(UInt.self, forKey: .cookieAcceptPolicy)
            ?? HTTPCookie.AcceptPolicy.onlyFromMainDocumentDomain.rawValue
        cookieJarFolder = try container.decodeIfPresent(String.self, forKey: .cookieJarFolder)
        cookies = try container.decodeIfPresent([Data].self, forKey: .cookies) ?? []
        credentialFile = try container.decodeIfPresent(String.self, forKey: .credentialFile)
        proxyDictionary = try container.decodeIfPresent(Data.self, forKey: .proxyDictionary)
        proxyEnvironment = try container.decodeIfPresent([String: String].self, forKey: .proxyEnvironment)
        maximumDecompressionRatio =
            try container.decodeIfPresent(Int.self, forKey: .maximumDecompressionRatio)
            ?? ContentCoding.defaultMaximumDecompressionRatio
    }
}

/// A task as the app creates it in the daemon.
package struct BackgroundTaskSpec: Codable, Sendable, Equatable {
    package enum Kind: Codable, Sendable, Equatable {
        case download
        /// An upload of the file at this path (the daemon reads it; it must stay until the task ends).
        case uploadFile(String)
    }

    package var task: Int
    package var kind: Kind
    package var request: CodableRequest
    /// `downloadTask(withResumeData:)`'s resume data.
    package var resumeData: Data?
    package var earliestBeginDate: Date?
    package var countOfBytesClientExpectsToReceive: Int64
    package var settings: BackgroundTransferSettings
    /// `taskDescription`, which the task keeps across app launches (as on Darwin).
    package var taskDescription: String?

    package init(
        task: Int, kind: Kind, request: CodableRequest, resumeData: Data? = nil, earliestBeginDate: Date? = nil,
        countOfBytesClientExpectsToReceive: Int64 = -1, settings: BackgroundTransferSettings,
        taskDescription: String? = nil
    ) {
        self.taskDescription = taskDescription
        self.task = task
        self.kind = kind
        self.request = request
        self.resumeData = resumeData
        self.earliestBeginDate = earliestBeginDate
        self.countOfBytesClientExpectsToReceive = countOfBytesClientExpectsToReceive
        self.settings = settings
    }
}

/// A task as the daemon reports it.
package struct BackgroundTaskSnapshot: Codable, Sendable, Equatable {
    package enum State: String, Codable, Sendable {
        /// Waiting for its `earliestBeginDate` or for a retry.
        case waiting
        case running
        case suspended
        /// Finished; its last events may still wait for the app.
        case completed
    }

    package var identifier: String
    package var task: Int
    package var kind: BackgroundTaskSpec.Kind
    package var originalRequest: CodableRequest
    package var state: State
    package var bytesReceived: Int64
    package var bytesExpectedToReceive: Int64
    package var response: CodableResponse?
    package var taskDescription: String?

    package init(
        identifier: String, task: Int, kind: BackgroundTaskSpec.Kind, originalRequest: CodableRequest, state: State,
        bytesReceived: Int64, bytesExpectedToReceive: Int64, response: CodableResponse?, taskDescription: String?
    ) {
        self.taskDescription = taskDescription
        self.identifier = identifier
        self.task = task
        self.kind = kind
        self.originalRequest = originalRequest
        self.state = state
        self.bytesReceived = bytesReceived
        self.bytesExpectedToReceive = bytesExpectedToReceive
        self.response = response
    }
}

/// One event of one task. Journaled events (a ``sequence`` above 0) wait in the daemon until the app says it
/// received them; progress events (sequence 0) go only to an attached app.
package struct BackgroundEvent: Codable, Sendable, Equatable {
    package enum Kind: Codable, Sendable, Equatable {
        case response(CodableResponse)
        /// The download continues at `offset` (0: it starts over).
        case resumed(offset: Int64, expectedTotal: Int64)
        case wrote(bytes: Int64, totalWritten: Int64, totalExpected: Int64)
        case sent(bytes: Int64, totalSent: Int64, totalExpected: Int64)
        case completed(BackgroundOutcome)
    }

    package var sequence: Int64
    package var task: Int
    package var kind: Kind

    package init(sequence: Int64, task: Int, kind: Kind) {
        self.sequence = sequence
        self.task = task
        self.kind = kind
    }
}

/// How a background task ended.
package struct BackgroundOutcome: Codable, Sendable, Equatable {
    /// A `URLError.Code` raw value; `nil` on success.
    package var errorCode: Int?
    package var errorDescription: String?
    package var failingURL: URL?
    /// The finished download's file (the daemon's; the app may move it while its delegate runs).
    package var file: String?
    package var resumeData: Data?
    /// The final response, when the task got one.
    package var response: CodableResponse?
    /// A finished upload's response body, in a file of the daemon's (delivered as the task's `didReceive` data).
    package var bodyFile: String?

    package init(
        errorCode: Int? = nil, errorDescription: String? = nil, failingURL: URL? = nil, file: String? = nil,
        resumeData: Data? = nil, response: CodableResponse? = nil, bodyFile: String? = nil
    ) {
        self.bodyFile = bodyFile
        self.errorCode = errorCode
        self.errorDescription = errorDescription
        self.failingURL = failingURL
        self.file = file
        self.resumeData = resumeData
        self.response = response
    }

    /// The error as the app sees it, with the failing URL, the description and resume data in its user info.
    package var error: URLError? {
        guard let errorCode else { return nil }
        var userInfo: [String: Any] = [:]
        if let resumeData { userInfo[NSURLSessionDownloadTaskResumeData] = resumeData }
        return URLErrorMapping.urlError(
            URLError.Code(rawValue: errorCode) ?? .unknown, failingURL: failingURL, description: errorDescription,
            extraUserInfo: userInfo)
    }
}
