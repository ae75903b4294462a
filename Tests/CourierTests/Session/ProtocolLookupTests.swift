import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

/// Claims (without loading: the base `startLoading()` fails the load) only requests whose path starts with `/protocol-lookup/registered`; registered by one test.
private final class RegisteredClaimingProtocol: URLProtocol, @unchecked Sendable {
    override class func canInit(with request: URLRequest) -> Bool {
        request.url?.path.hasPrefix("/protocol-lookup/registered") == true
    }
}

/// Claims (without loading) only requests whose path starts with `/protocol-lookup/listed`; registered by one test.
/// A class of its own: tests run in parallel, and another test's unregistering of ``RegisteredClaimingProtocol``
/// must not take it away from this one.
private final class ListedClaimingProtocol: URLProtocol, @unchecked Sendable {
    override class func canInit(with request: URLRequest) -> Bool {
        request.url?.path.hasPrefix("/protocol-lookup/listed") == true
    }
}

/// Claims only requests whose path starts with `/protocol-lookup/configured` or whose scheme is `courier-test`;
/// only ever listed in a configuration's `protocolClasses`.
private final class ConfiguredClaimingProtocol: URLProtocol, @unchecked Sendable {
    override class func canInit(with request: URLRequest) -> Bool {
        request.url?.scheme == "courier-test" || request.url?.path.hasPrefix("/protocol-lookup/configured") == true
    }
}

/// Registered, but claims nothing.
private final class DecliningProtocol: URLProtocol, @unchecked Sendable {
    override class func canInit(with request: URLRequest) -> Bool {
        false
    }
}

/// Claims redirect targets under `/protocol-lookup/redirected`; only listed in a configuration.
private final class RedirectTargetProtocol: URLProtocol, @unchecked Sendable {
    override class func canInit(with request: URLRequest) -> Bool {
        request.url?.path.hasPrefix("/protocol-lookup/redirected") == true
    }
}

@Suite("Custom URLProtocol lookup")
struct ProtocolLookupTests {
    /// As on Darwin, a registered class is consulted by the shared session only: a session made with a
    /// configuration (Mocker registers itself, and the app's own sessions must not be stubbed by that) loads from
    /// the network.
    @Test func aRegisteredProtocolThatClaimsButDoesNotLoadFailsTheSharedSessionsTaskOnly() async throws {
        #expect(URLProtocol.registerClass(RegisteredClaimingProtocol.self))
        defer { URLProtocol.unregisterClass(RegisteredClaimingProtocol.self) }
        try await withServer { server in
            server.route("/protocol-lookup/registered", response: .ok("loaded"))
            let outcome = await URLSession.shared.runDataTask(server.url("/protocol-lookup/registered"))
            #expect(outcome.urlError?.code == .unsupportedURL)
            #expect(outcome.urlError?.localizedDescription.contains("RegisteredClaimingProtocol") == true)
            #expect(outcome.response == nil)
            #expect(server.requests.isEmpty)

            for configuration in [URLSessionConfiguration.default, .ephemeral] {
                let session = makeSession { $0.protocolClasses = configuration.protocolClasses }
                defer { session.finishTasksAndInvalidate() }
                let own = await session.runDataTask(server.url("/protocol-lookup/registered"))
                #expect(own.error == nil)
                #expect(own.data == Data("loaded".utf8))
            }
            #expect(server.requests.count == 2)
        }
    }

    /// Darwin's shared session lists the registered classes in its configuration's `protocolClasses`: a session
    /// made with that configuration consults them too.
    @Test func theSharedSessionsConfigurationListsTheRegisteredClasses() async throws {
        #expect(URLProtocol.registerClass(ListedClaimingProtocol.self))
        defer { URLProtocol.unregisterClass(ListedClaimingProtocol.self) }
        let listed = URLSession.shared.configuration.protocolClasses ?? []
        #expect(listed.contains { $0 == ListedClaimingProtocol.self })
        try await withServer { server in
            server.route("/protocol-lookup/listed", response: .ok("loaded"))
            let session = URLSession(configuration: URLSession.shared.configuration)
            defer { session.finishTasksAndInvalidate() }
            let outcome = await session.runDataTask(server.url("/protocol-lookup/listed"))
            #expect(outcome.urlError?.code == .unsupportedURL)
            #expect(server.requests.isEmpty)
        }
        #expect(
            !(URLSessionConfiguration.default.protocolClasses ?? []).contains { $0 == ListedClaimingProtocol.self })
    }

    @Test func aConfiguredProtocolThatClaimsButDoesNotLoadFailsTheTaskWithoutARequest() async throws {
        try await withServer { server in
            server.route("/protocol-lookup/configured", response: .ok("must not be loaded"))
            let session = makeSession { configuration in
                configuration.protocolClasses = [NSObject.self, ConfiguredClaimingProtocol.self]
            }
            defer { session.finishTasksAndInvalidate() }
            let outcome = await session.runDataTask(server.url("/protocol-lookup/configured"))
            #expect(outcome.urlError?.code == .unsupportedURL)
            #expect(outcome.urlError?.localizedDescription.contains("ConfiguredClaimingProtocol") == true)
            #expect(server.requests.isEmpty)
        }
    }

    @Test func aClaimedCustomSchemeNamesTheProtocol() async throws {
        let session = makeSession { configuration in
            configuration.protocolClasses = [ConfiguredClaimingProtocol.self]
        }
        defer { session.finishTasksAndInvalidate() }
        let outcome = await session.runDataTask(try #require(URL(string: "courier-test://anything/")))
        #expect(outcome.urlError?.code == .unsupportedURL)
        #expect(outcome.urlError?.localizedDescription.contains("ConfiguredClaimingProtocol") == true)
    }

    @Test func protocolsThatDeclineLetTheRequestThrough() async throws {
        #expect(URLProtocol.registerClass(DecliningProtocol.self))
        defer { URLProtocol.unregisterClass(DecliningProtocol.self) }
        try await withServer { server in
            server.route("/protocol-lookup/declined", response: .ok("loaded"))
            let session = makeSession { configuration in
                configuration.protocolClasses = [
                    NSObject.self, DecliningProtocol.self, ConfiguredClaimingProtocol.self,
                ]
            }
            defer { session.finishTasksAndInvalidate() }
            for session in [session, URLSession.shared] {
                let outcome = await session.runDataTask(server.url("/protocol-lookup/declined"))
                #expect(outcome.error == nil)
                #expect(outcome.http?.statusCode == 200)
                #expect(outcome.data == Data("loaded".utf8))
            }
            #expect(server.requests(path: "/protocol-lookup/declined").count == 2)
        }
    }

    @Test func aRedirectTargetClaimedByANonLoadingProtocolFailsTheTask() async throws {
        try await withServer { server in
            server.route(
                "/protocol-lookup/start",
                response: MockResponse(status: 302, headers: [("Location", "/protocol-lookup/redirected")]))
            server.route("/protocol-lookup/redirected", response: .ok("must not be loaded"))
            let session = makeSession { configuration in
                configuration.protocolClasses = [RedirectTargetProtocol.self]
            }
            defer { session.finishTasksAndInvalidate() }
            let outcome = await session.runDataTask(server.url("/protocol-lookup/start"))
            #expect(outcome.urlError?.code == .unsupportedURL)
            #expect(outcome.urlError?.localizedDescription.contains("RedirectTargetProtocol") == true)
            #expect(server.requests(path: "/protocol-lookup/start").count == 1)
            #expect(server.requests(path: "/protocol-lookup/redirected").isEmpty)
        }
    }
}
