import CourierHTTP
import Foundation

// The user-info key of the server's trust, `NSURLErrorFailingURLPeerTrustErrorKey`, is Foundation's own (the same
// name and value as on Darwin): a second declaration here made every use of it ambiguous in code that imports both
// Foundation and Courier.

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
