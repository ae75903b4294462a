/// A TLS or DTLS protocol version: Courier's Linux stand-in for the Security framework's `tls_protocol_version_t`.
///
/// On Apple platforms this is an imported C enumeration; here it is a structure with the same constant names and raw
/// values, so code that uses the constants compiles unchanged.
// swift-format-ignore: TypeNamesShouldBeCapitalized
public struct tls_protocol_version_t: RawRepresentable, Hashable, Sendable {
    /// The protocol version as it appears on the wire.
    public var rawValue: UInt16

    /// Creates a protocol version from its wire value.
    ///
    /// - Parameter rawValue: The protocol version as it appears on the wire, such as `0x0303` for TLS 1.2.
    public init(rawValue: UInt16) {
        self.rawValue = rawValue
    }

    /// TLS 1.0.
    public static let TLSv10 = tls_protocol_version_t(rawValue: 0x0301)
    /// TLS 1.1.
    public static let TLSv11 = tls_protocol_version_t(rawValue: 0x0302)
    /// TLS 1.2.
    public static let TLSv12 = tls_protocol_version_t(rawValue: 0x0303)
    /// TLS 1.3.
    public static let TLSv13 = tls_protocol_version_t(rawValue: 0x0304)
    /// DTLS 1.0.
    public static let DTLSv10 = tls_protocol_version_t(rawValue: 0xfeff)
    /// DTLS 1.2.
    public static let DTLSv12 = tls_protocol_version_t(rawValue: 0xfefd)
}
