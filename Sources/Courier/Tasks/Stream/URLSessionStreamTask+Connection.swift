import CourierHTTP
import CourierTransport
import Foundation
import NIOConcurrencyHelpers

/// Hands a stream connection's events to its task, held weakly: the task holds the connection, and once nothing
/// holds the task (it ended and the session let it go) its events have nobody to go to.
final class StreamEventRelay: Sendable {
    private struct WeakTask {
        weak var task: URLSessionStreamTask?
    }

    private let box = NIOLockedValueBox(WeakTask())

    func attach(_ task: URLSessionStreamTask) {
        box.withLockedValue { $0.task = task }
    }

    func deliver(_ event: StreamConnectionEvent) {
        box.withLockedValue { $0.task }?.connectionEvent(event)
    }
}

extension URLSessionStreamTask {
    /// The connection's events, on its event loop: delegate calls go to the delegate queue, in order; the end of the
    /// connection completes the task (which is then done with delegate calls).
    func connectionEvent(_ event: StreamConnectionEvent) {
        switch event {
        case .readClosed:
            TaskEventAdapter.streamSideClosed(self, read: true)
        case .writeClosed:
            TaskEventAdapter.streamSideClosed(self, read: false)
        case .finished:
            complete(with: nil, body: nil)
        case .failed(let error):
            let url = originalRequest?.url
            complete(
                with: URLErrorMapping.urlError(from: error, failingURL: url).addingPeerTrust(of: error, host: hostName),
                body: nil)
        }
    }

    /// The error a call reports: Darwin's `URLError`, or the POSIX error of a call on a side the app closed.
    func publicError(_ error: any Error) -> any Error & Sendable {
        switch error {
        case StreamConnectionError.writeSideClosed:
            return POSIXError(.EPIPE)
        case StreamConnectionError.readSideClosed:
            return POSIXError(.ENOTCONN)
        case let transfer as TransferError:
            return URLErrorMapping.urlError(from: transfer, failingURL: originalRequest?.url).addingPeerTrust(
                of: transfer, host: hostName)
        default:
            return URLErrorMapping.urlError(from: error, failingURL: originalRequest?.url)
        }
    }

    /// TLS as the session's HTTPS requests have it: its settings (with the credential storage's client identity for
    /// sessions without a delegate), its trust evaluator, and its timeout for the handshake.
    func tlsSetup() -> StreamTLSSetup {
        var components = URLComponents()
        components.scheme = "https"
        components.host = hostName
        components.port = port
        let settings =
            if session.identityStorage != nil, let url = components.url {
                ClientCertificateCredentials.settings(session.tlsSettings, for: url, storage: session.identityStorage)
            } else {
                session.tlsSettings
            }
        return StreamTLSSetup(
            settings: settings,
            trustEvaluator: session.trustEvaluator,
            clientCertificateProvider: session.trustEvaluator,
            handshakeTimeout: TaskEngine.timeAmount(session.sessionConfiguration.timeoutIntervalForRequest)
        )
    }

    /// `captureStreams()`, once the earlier calls completed: the task ends (no `didCompleteWithError`, as on Darwin)
    /// and the delegate gets the streams.
    func becomeStreams() {
        let pair = CapturedStreamPair(connection: connection)
        endSilently(removeFromSession: false)
        TaskEventAdapter.streamsCaptured(self, pair)
    }
}
