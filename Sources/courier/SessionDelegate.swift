import Courier
import Foundation
import NIOConcurrencyHelpers

/// The delegate of `courier`'s sessions: answers server-trust challenges with the run's ``TrustPolicy`` and hands
/// every task event to the ``TaskHandler`` registered for the task.
final class SessionDelegate: NSObject, URLSessionDataDelegate, URLSessionDownloadDelegate, @unchecked Sendable {
    private let handlers = NIOLockedValueBox<[ObjectIdentifier: TaskHandler]>([:])
    /// Why the trust of a host was refused, for the exit status of the transfers that then fail as cancelled.
    private let trustRefusals = NIOLockedValueBox<[String: (reason: String, exitStatus: Int32)]>([:])
    private let trust: TrustPolicy
    private let verboseLog: VerboseLog?

    init(trust: TrustPolicy, verboseLog: VerboseLog?) {
        self.trust = trust
        self.verboseLog = verboseLog
    }

    func register(_ handler: TaskHandler, for task: URLSessionTask) {
        handlers.withLockedValue { $0[ObjectIdentifier(task)] = handler }
    }

    private func handler(_ task: URLSessionTask) -> TaskHandler? {
        handlers.withLockedValue { $0[ObjectIdentifier(task)] }
    }

    /// Why connections to `host` were refused, if the trust policy refused them.
    func trustRefusal(host: String) -> (reason: String, exitStatus: Int32)? {
        trustRefusals.withLockedValue { $0[host] }
    }

    // MARK: Session

    func urlSession(
        _ session: URLSession, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        let space = challenge.protectionSpace
        guard space.authenticationMethod == NSURLAuthenticationMethodServerTrust, let serverTrust = space.serverTrust
        else {
            completionHandler(.performDefaultHandling, nil)
            return
        }
        if let verboseLog, let leaf = (SecTrustCopyCertificateChain(serverTrust) as? [SecCertificate])?.first,
            let subject = SecCertificateCopySubjectSummary(leaf)
        {
            verboseLog.noteCertificate(subject: subject, host: space.host)
        }
        switch trust.verdict(for: serverTrust, host: space.host) {
        case .accept(let credential):
            completionHandler(.useCredential, credential)
        case .defaultHandling:
            completionHandler(.performDefaultHandling, nil)
        case .reject(let reason, let exitStatus):
            trustRefusals.withLockedValue { $0[space.host] = (reason, exitStatus) }
            completionHandler(.cancelAuthenticationChallenge, nil)
        }
    }

    // MARK: Tasks

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        guard let handler = handler(task) else {
            completionHandler(.performDefaultHandling, nil)
            return
        }
        let (disposition, credential) = handler.didReceive(challenge: challenge)
        completionHandler(disposition, credential)
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(handler(task)?.willRedirect(to: request) ?? request)
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        completionHandler(handler(dataTask)?.didReceive(response: response, task: dataTask) ?? .allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        handler(dataTask)?.didReceive(data: data, task: dataTask)
    }

    func urlSession(
        _ session: URLSession, downloadTask: URLSessionDownloadTask, didWriteData bytesWritten: Int64,
        totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64
    ) {
        handler(downloadTask)?.didWrite(
            bytes: bytesWritten, totalWritten: totalBytesWritten, totalExpected: totalBytesExpectedToWrite,
            task: downloadTask)
    }

    func urlSession(
        _ session: URLSession, downloadTask: URLSessionDownloadTask, didResumeAtOffset fileOffset: Int64,
        expectedTotalBytes: Int64
    ) {
        handler(downloadTask)?.didResume(atOffset: fileOffset, expectedTotal: expectedTotalBytes)
    }

    func urlSession(
        _ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL
    ) {
        handler(downloadTask)?.didFinishDownloading(to: location, task: downloadTask)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didFinishCollecting metrics: URLSessionTaskMetrics) {
        handler(task)?.didFinishCollecting(metrics)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let handler = handlers.withLockedValue { $0.removeValue(forKey: ObjectIdentifier(task)) }
        handler?.didComplete(error: error)
    }
}
