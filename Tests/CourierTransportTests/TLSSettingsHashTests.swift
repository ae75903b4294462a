import Testing

@testable import CourierTransport

/// ``TLSSettings`` hash their trusted certificates from lengths and ends only, once; equality still reads every
/// byte, so settings whose certificates differ anywhere never share a pool.
@Suite("TLS settings: hashing the trusted certificates")
struct TLSSettingsHashTests {
    private func certificate(_ fill: UInt8, count: Int = 900, middle: UInt8? = nil) -> [UInt8] {
        var bytes = [UInt8](repeating: fill, count: count)
        if let middle { bytes[count / 2] = middle }
        return bytes
    }

    @Test func equalSettingsHashAlike() {
        let a = TLSSettings(additionalTrustedCertificatesDER: [certificate(1), certificate(2)])
        let b = TLSSettings(additionalTrustedCertificatesDER: [certificate(1), certificate(2)])
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
    }

    /// Certificates that differ only in the middle share the hash (it reads the ends), but not equality.
    @Test func aDifferenceAnywhereIsUnequal() {
        let a = TLSSettings(additionalTrustedCertificatesDER: [certificate(1)])
        let b = TLSSettings(additionalTrustedCertificatesDER: [certificate(1, middle: 9)])
        #expect(a.hashValue == b.hashValue)
        #expect(a != b)
        var pools: Set<TLSSettings> = [a]
        pools.insert(b)
        #expect(pools.count == 2)
    }

    /// Different ends, lengths or counts give different fingerprints.
    @Test func endsLengthsAndCountsAreHashed() {
        let base = TLSSettings.fingerprint(of: [certificate(1)])
        #expect(TLSSettings.fingerprint(of: [certificate(2)]) != base)
        #expect(TLSSettings.fingerprint(of: [certificate(1, count: 901)]) != base)
        #expect(TLSSettings.fingerprint(of: [certificate(1), certificate(1)]) != base)
        #expect(TLSSettings.fingerprint(of: []) != base)
    }
}
