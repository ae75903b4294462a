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
        let key = sessionKey(downloadFolder: downloadFolder, transfer: transfer)
        return sessions.withLockedValue { sessions in
            if let session = sessions[key] { return session }
            let configuration = settings.configuration(cookies: cookies, downloadDirectory: downloadFolder)
            let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
            sessions[key] = session
            return session
        }
    }

    /// Transfer `transfer` has ended: when its session was its own (its download folder was private to it, or
    /// `--limit-rate` gave it one), the session is invalidated, which closes its idle connections at once. Each
    /// session has a connection pool of its own whose keep-alive connections stay open for a minute: kept until
    /// the end of the run, a command with hundreds of URLs held a connection for each transfer of the last minute
    /// and ran out of file descriptors. A session other transfers share (standard output's, `-C -`'s folder) stays.
    func release(downloadFolder: URL?, privateFolder: Bool, transfer: Int) {
        guard privateFolder || settings.limitRate != nil else { return }
        let key = sessionKey(downloadFolder: downloadFolder, transfer: transfer)
        let session = sessions.withLockedValue { $0.removeValue(forKey: key) }
        session?.finishTasksAndInvalidate()
    }

    private func sessionKey(downloadFolder: URL?, transfer: Int) -> String {
        (downloadFolder?.path ?? "") + (settings.limitRate == nil ? "" : "#\(transfer)")
    }

    /// Lets every session finish and release its connections.
    func finish() {
        for session in sessions.withLockedValue({ Array($0.values) }) { session.finishTasksAndInvalidate() }
    }
}
