import CourierHTTP
import Testing

@Suite("Certificate host names")
struct CertificateHostNameTests {
    @Test(arguments: [
        ("example.com", "example.com", true), ("Example.COM", "example.com", true),
        ("example.com.", "example.com", true),
        ("example.com", "example.com.", true), ("*.example.com", "a.example.com", true),
        ("*.example.com", "A.Example.com.", true), ("*.example.com", "example.com", false),
        ("*.example.com", "a.b.example.com", false), ("*.com", "example.com", false), ("*", "localhost", false),
        ("a*.example.com", "ab.example.com", false), ("*.*.example.com", "a.b.example.com", false),
        ("example.com", "a.example.com", false), ("", "example.com", false), ("example.com", "", false),
        ("a..com", "a..com", false), ("127.0.0.1", "localhost", false),
    ])
    func aPatternCoversTheHostsItNames(pattern: String, host: String, covers: Bool) {
        #expect(CertificateHostName.matches(pattern: pattern, host: host) == covers)
    }
}
