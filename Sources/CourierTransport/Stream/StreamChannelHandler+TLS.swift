import CourierHTTP
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL

/// Where a ``ServerTrustEvaluator`` leaves its reason for rejecting a server: the failed handshake cannot carry it.
typealias RejectionBox = NIOLockedValueBox<TransferError?>

extension StreamChannelHandler {
    /// Runs a `startTLS` barrier: every earlier call is done, so NIOSSL's client handler goes in front of this one
    /// on the live connection, as HTTPS connections make it (same contexts, same trust evaluation). The barrier ends
    /// when the handshake completes (`TLSUserEvent.handshakeCompleted`); a failed handshake fails the connection.
    func startTLS(barrier id: StreamStateMachine.ID) {
        guard let setup = tlsSetups.removeValue(forKey: id) else { return }
        let tlsEndpoint = Endpoint(scheme: .https, host: endpoint.host, port: endpoint.port)
        let rejection = RejectionBox(nil)
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        let timer = eventLoop.scheduleTask(in: setup.handshakeTimeout) {
            bound.value.fail(.timedOut("the TLS handshake with \(tlsEndpoint) timed out"))
        }
        handshake = (id, timer, rejection, setup.trustEvaluator == nil)
        TLSContextCache.shared.clientContext(
            for: setup.settings, endpoint: tlsEndpoint, trustEvaluator: setup.trustEvaluator,
            clientCertificateProvider: setup.clientCertificateProvider, on: eventLoop
        ).whenComplete { result in
            bound.value.install(result, setup: setup, endpoint: tlsEndpoint, rejection: rejection)
        }
    }

    private func install(
        _ context: Result<NIOSSLContext, any Error>, setup: StreamTLSSetup, endpoint: Endpoint, rejection: RejectionBox
    ) {
        guard handshake != nil, let channelContext = channelContext else { return }
        do {
            let handler = try ConnectionFactory.makeTLSHandler(
                context: try context.get(),
                serverHostname: endpoint.hostIsIPLiteral ? nil : endpoint.host,
                endpoint: endpoint,
                evaluator: setup.trustEvaluator,
                rejection: rejection
            )
            try channelContext.pipeline.syncOperations.addHandler(handler, position: .before(self))
            // The handshake needs the server's answer: one read starts it, NIOSSL asks for more until it is done.
            channelContext.read()
        } catch {
            fail(error as? TransferError ?? .secureConnectionFailed("cannot start TLS with \(endpoint): \(error)"))
        }
    }
}
