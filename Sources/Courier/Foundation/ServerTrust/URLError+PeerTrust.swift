import CourierHTTP
import Foundation

/// The user-info key of the server's trust in a `URLError` about its certificate (Darwin's name and value).
public let NSURLErrorFailingURLPeerTrustErrorKey: String = "NSURLErrorFailingURLPeerTrustErrorKey"

extension URLError {
    /// The server's trust (its certificate chain) when the error is about its certificate, as on Darwin.
    public var failureURLPeerTrust: SecTrust? {
        userInfo[NSURLErrorFailingURLPeerTrustErrorKey] as? SecTrust
    }

    /// This error with the peer trust of `error`, when `error` is a refused certificate that carries its chain.
    func addingPeerTrust(of error: TransferError, host: String?) -> URLError {
        guard let chain = error.peerCertificateChain else { return self }
        var info = userInfo
        info[NSURLErrorFailingURLPeerTrustErrorKey] = SecTrust(
            certificates: chain.map { SecCertificate(derData: Data($0)) }, host: host ?? "")
        return URLError(code, userInfo: info)
    }
}
