/// The protocol of a protection space for HTTP.
public let NSURLProtectionSpaceHTTP: String = "http"
/// The protocol of a protection space for HTTPS.
public let NSURLProtectionSpaceHTTPS: String = "https"
/// The protocol of a protection space for FTP.
public let NSURLProtectionSpaceFTP: String = "ftp"
/// The proxy type of a protection space for an HTTP proxy.
public let NSURLProtectionSpaceHTTPProxy: String = "http"
/// The proxy type of a protection space for an HTTPS proxy.
public let NSURLProtectionSpaceHTTPSProxy: String = "https"
/// The proxy type of a protection space for an FTP proxy.
public let NSURLProtectionSpaceFTPProxy: String = "ftp"
/// The proxy type of a protection space for a SOCKS proxy.
public let NSURLProtectionSpaceSOCKSProxy: String = "SOCKS"

/// The default authentication method for a protocol.
public let NSURLAuthenticationMethodDefault: String = "NSURLAuthenticationMethodDefault"
/// HTTP basic authentication.
public let NSURLAuthenticationMethodHTTPBasic: String = "NSURLAuthenticationMethodHTTPBasic"
/// HTTP digest authentication.
public let NSURLAuthenticationMethodHTTPDigest: String = "NSURLAuthenticationMethodHTTPDigest"
/// HTML form authentication.
public let NSURLAuthenticationMethodHTMLForm: String = "NSURLAuthenticationMethodHTMLForm"
/// NTLM authentication.
public let NSURLAuthenticationMethodNTLM: String = "NSURLAuthenticationMethodNTLM"
/// Negotiate (Kerberos or NTLM) authentication.
public let NSURLAuthenticationMethodNegotiate: String = "NSURLAuthenticationMethodNegotiate"
/// Client certificate authentication.
public let NSURLAuthenticationMethodClientCertificate: String = "NSURLAuthenticationMethodClientCertificate"
/// Server trust authentication: the client evaluates the server's certificate chain.
public let NSURLAuthenticationMethodServerTrust: String = "NSURLAuthenticationMethodServerTrust"
