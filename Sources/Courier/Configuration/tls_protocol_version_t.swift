/// A TLS or DTLS protocol version: Courier's Linux stand-in for the Security framework's `tls_protocol_version_t`.
///
/// On Apple platforms this is an imported C enumeration; here, as in the toolchain's FoundationNetworking, it is a
/// Swift enumeration with the same case names and the versions' wire values as raw values, so code that uses the
/// constants compiles unchanged. `init(rawValue:)` returns `nil` for a value that names no TLS or DTLS version.
// swift-format-ignore: TypeNamesShouldBeCapitalized
public enum tls_protocol_version_t: UInt16, Sendable {
    /// TLS 1.0.
    case TLSv10 = 0x0301
    /// TLS 1.1.
    case TLSv11 = 0x0302
    /// TLS 1.2.
    case TLSv12 = 0x0303
    /// TLS 1.3.
    case TLSv13 = 0x0304
    /// DTLS 1.0.
    case DTLSv10 = 0xfeff
    /// DTLS 1.2.
    case DTLSv12 = 0xfefd
}
