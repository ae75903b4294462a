import Courier
import Foundation
import NIOConcurrencyHelpers

/// The run's sessions: one per download folder (the folder is a session setting), all with the same delegate,
/// settings and cookie storage, so cookies set by one transfer are sent by the next.
final class SessionPool: Sendable {
    private let settings: TransferSettings
    private let delegate: SessionDelegate
    let cookies: HTTPCookieStorage?
    private let sessions = NIOLockedValueBox<[String: URLSession]>([:])

    init(settings: TransferSettings, delegate: SessionDelegate, cookies: HTTPCookieStorage?) {
        self.settings = settings
        self.delegate = delegate
        self.cookies = cookies
    }

    /// The session whose download tasks write into `downloadFolder` (any session for data tasks). With
    /// `--limit-rate` each transfer (`transfer`) has a session, and so a delegate queue, of its own: it waits on
    /// that queue while it is ahead of its rate.
    func session(downloadFolder: URL?, transfer: Int) -> URLSession {
        let key = (downloadFolder?.path ?? "") + (settings.limitRate == nil ? "" : "#\(transfer)")
        return sessions.withLockedValue { sessions in
            if let session = sessions[key] { return session }
            let configuration = settings.configuration(cookies: cookies, downloadDirectory: downloadFolder)
            let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
            sessions[key] = session
            return session
        }
    }

    /// Lets every session finish and release its connections.
    func finish() {
        for session in sessions.withLockedValue({ Array($0.values) }) { session.finishTasksAndInvalidate() }
    }
}
