import CourierTransport
import Foundation
import Logging

/// What every task of a session runs on, made once with the session: its configuration and what was read from it,
/// its transport, TLS settings, trust and identity choices, logger and telemetry.
///
/// A class so that each task's ``TaskEngine/Environment`` holds one reference to it instead of a copy of every
/// field: making and releasing an engine then costs one retain and one release here, not a dozen.
final class SessionEnvironment: Sendable {
    let configuration: URLSessionConfiguration
    /// What the stages read from the configuration (see ``StageSettings``).
    let stageSettings: StageSettings
    let transport: any Transport
    let tls: TLSSettings
    /// The Basic spaces the session authenticated in.
    let authenticatedSpaces: AuthenticatedSpaces
    /// Decides about new TLS connections (asks the session's delegate), if the session has one.
    let trustEvaluator: (any ServerTrustEvaluator)?
    /// Chooses client certificates (asks the session's delegate), if the session has one.
    let clientCertificateProvider: (any ClientCertificateProvider)?
    /// Without a delegate: the storage whose default identity for an origin is presented when a server asks.
    let identityStorage: URLCredentialStorage?
    let logger: Logger
    /// The session's tracer and metrics, when either is bootstrapped (`nil` costs nothing).
    let telemetry: SessionTelemetry?
    /// The connection-level settings every request of the session starts from, made once and shared by the
    /// session's transport requests (a request that changes one gets a copy).
    let connectionOptions: TransportRequest.ConnectionOptions

    init(
        configuration: URLSessionConfiguration,
        stageSettings: StageSettings,
        transport: any Transport,
        tls: TLSSettings,
        authenticatedSpaces: AuthenticatedSpaces,
        trustEvaluator: (any ServerTrustEvaluator)?,
        clientCertificateProvider: (any ClientCertificateProvider)?,
        identityStorage: URLCredentialStorage?,
        logger: Logger,
        telemetry: SessionTelemetry?
    ) {
        self.configuration = configuration
        self.stageSettings = stageSettings
        self.transport = transport
        self.tls = tls
        self.authenticatedSpaces = authenticatedSpaces
        self.trustEvaluator = trustEvaluator
        self.clientCertificateProvider = clientCertificateProvider
        self.identityStorage = identityStorage
        self.logger = logger
        self.telemetry = telemetry
        self.connectionOptions = TransportRequest.ConnectionOptions(
            tls: tls, trustEvaluator: trustEvaluator, clientCertificateProvider: clientCertificateProvider,
            maximumDecompressionRatio: stageSettings.maximumDecompressionRatio,
            waitsForConnectivity: stageSettings.waitsForConnectivity)
    }
}
