import Foundation
import NIOSSL

/// The option of ``SecPKCS12Import(_:_:_:)`` that holds the archive's passphrase (a `String`).
public let kSecImportExportPassphrase: CFString = "passphrase"
/// The key of an imported item's ``SecIdentity``.
public let kSecImportItemIdentity: CFString = "identity"
/// The key of an imported item's certificate chain, an array of ``SecCertificate``, leaf first.
public let kSecImportItemCertChain: CFString = "chain"
/// The key of an imported item's ``SecTrust`` for its chain.
public let kSecImportItemTrust: CFString = "trust"
/// The key of an imported item's label: the leaf certificate's subject summary.
public let kSecImportItemLabel: CFString = "label"

/// The passphrase was wrong.
public let errSecAuthFailed: OSStatus = -25293
/// The data could not be decoded.
public let errSecDecode: OSStatus = -26275

/// Reads a PKCS #12 archive (a `.p12` or `.pfx` file) into an identity, as Darwin does.
///
/// On success `items` holds one dictionary with ``kSecImportItemIdentity``, ``kSecImportItemCertChain``,
/// ``kSecImportItemTrust`` and ``kSecImportItemLabel`` (read it with `items as? [[String: Any]]`). The usual
/// Darwin code compiles unchanged:
///
/// ```swift
/// var items: CFArray?
/// let options = [kSecImportExportPassphrase as String: passphrase] as CFDictionary
/// guard SecPKCS12Import(p12 as CFData, options, &items) == errSecSuccess,
///     let item = (items as? [[String: Any]])?.first,
///     let identity = item[kSecImportItemIdentity as String] as! SecIdentity?
/// else { return }
/// ```
///
/// - Returns: ``errSecSuccess``; ``errSecAuthFailed`` for a wrong passphrase; ``errSecDecode`` for data that is not
///   an archive with a certificate and its key; ``errSecParam`` for a passphrase that is not a `String`.
public func SecPKCS12Import(_ pkcs12Data: CFData, _ options: CFDictionary, _ items: UnsafeMutablePointer<CFArray?>)
    -> OSStatus
{
    let passphrase = options[kSecImportExportPassphrase]
    if passphrase != nil && !(passphrase is String) { return errSecParam }
    let bundle: NIOSSLPKCS12Bundle
    do {
        bundle = try NIOSSLPKCS12Bundle(
            buffer: Array(pkcs12Data), passphrase: Array(((passphrase as? String) ?? "").utf8))
    } catch {
        return String(describing: error).contains("INCORRECT_PASSWORD") ? errSecAuthFailed : errSecDecode
    }
    guard let identity = try? SecIdentity(chain: bundle.certificateChain, privateKey: bundle.privateKey) else {
        return errSecDecode
    }
    let chain = bundle.certificateChain.compactMap { try? SecCertificate(derData: Data($0.toDERBytes())) }
    var item: [String: Any] = [
        kSecImportItemIdentity: identity,
        kSecImportItemCertChain: chain,
        kSecImportItemTrust: SecTrust(certificates: chain, policy: SecPolicy(server: false, hostname: nil)),
    ]
    item[kSecImportItemLabel] = SecCertificateCopySubjectSummary(identity.certificate)
    items.pointee = [item]
    return errSecSuccess
}
