import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

@Suite("HTTPS")
struct HTTPSTests {
    @Test func trustedSelfSignedCertificateWorks() async throws {
        try await withServer(.https) { server in
            server.route("/secure", response: .ok("secret"))
            let session = makeSession { $0.courierAdditionalTrustedCertificates = [Data(server.certificateDER)] }
            let outcome = await session.runDataTask(server.url("/secure"))
            #expect(outcome.error == nil)
            #expect(outcome.data == Data("secret".utf8))
        }
    }

    @Test func untrustedCertificateIsRejected() async throws {
        try await withServer(.https) { server in
            server.route("/secure", response: .ok("secret"))
            let outcome = await makeSession().runDataTask(server.url("/secure"))
            #expect(outcome.urlError?.code == .serverCertificateUntrusted)
            #expect(server.requests.isEmpty)
        }
    }

    @Test func ipv6LiteralsAreVerifiedAgainstTheCertificate() async throws {
        try await withServer(.https, host: "::1") { server in
            server.route("/six", response: .ok("six"))
            let session = makeSession { $0.courierAdditionalTrustedCertificates = [Data(server.certificateDER)] }
            let url = try #require(URL(string: "https://[::1]:\(server.port)/six"))
            #expect(await session.runDataTask(url).data == Data("six".utf8))
        }
    }

    @Test func hostNamesAreVerifiedAgainstTheCertificate() async throws {
        // A localhost server listens on both loopbacks, so whichever address localhost resolves to first answers.
        try await withServer(.https, host: "localhost") { server in
            server.route("/name", response: .ok("named"))
            let session = makeSession { $0.courierAdditionalTrustedCertificates = [Data(server.certificateDER)] }
            let url = try #require(URL(string: "https://localhost:\(server.port)/name"))
            let outcome = await session.runDataTask(url)
            #expect(outcome.error == nil)
            #expect(outcome.data == Data("named".utf8))
        }
    }

    @Test func tlsVersionLimitsAreHonoured() async throws {
        try await withServer(.https) { server in
            server.route("/v", response: .ok("v"))
            let onlyTLS13 = makeSession { configuration in
                configuration.courierAdditionalTrustedCertificates = [Data(server.certificateDER)]
                configuration.tlsMinimumSupportedProtocolVersion = .TLSv13
            }
            #expect(await onlyTLS13.runDataTask(server.url("/v")).data == Data("v".utf8))
            let impossible = makeSession { configuration in
                configuration.courierAdditionalTrustedCertificates = [Data(server.certificateDER)]
                configuration.tlsMinimumSupportedProtocolVersion = .TLSv13
                configuration.tlsMaximumSupportedProtocolVersion = .TLSv12
            }
            #expect(await impossible.runDataTask(server.url("/v")).urlError?.code == .secureConnectionFailed)
        }
    }
}
