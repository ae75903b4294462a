import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

@testable import Courier

extension BackgroundSuites {
    /// What of the app's configuration outside the task reaches the daemon: its credential storage, its cookies
    /// (both ways) and its proxies.
    @Suite("Background sessions: storages and proxies", .serialized)
    struct BackgroundStorageTests {
        private static func space(_ server: MockServer) -> URLProtectionSpace {
            URLProtectionSpace(
                host: "127.0.0.1", port: server.port, protocol: "http", realm: "vault",
                authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
        }

        /// A credential the app's storage keeps for the session only (in its memory) answers the daemon's challenge
        /// when the delegate asks for default handling, as it would in process.
        @Test func theAppsStoredCredentialAnswersByDefault() async throws {
            try await withBackgroundServer { fixture, server in
                server.protect("/secret", user: "ada", password: "lovelace", realm: "vault", response: .ok("the plans"))
                let storage = URLCredentialStorage()
                storage.setDefaultCredential(
                    URLCredential(user: "ada", password: "lovelace", persistence: .forSession), for: Self.space(server))
                let configuration = fixture.configuration("app.stored")
                configuration.urlCredentialStorage = storage
                let recorder = BackgroundRecorder()
                let session = await fixture.session(configuration, delegate: recorder)
                let task = session.downloadTask(with: server.url("/secret"))
                task.resume()
                await recorder.waitForCompletions(1)
                #expect(recorder.errors[1] == .some(nil), "\(fixture.daemonLog)")
                #expect(recorder.finished.first?.bytes == Data("the plans".utf8))
                #expect((task.response as? HTTPURLResponse)?.statusCode == 200)
                #expect(recorder.challengesSeen == ["127.0.0.1 vault 0"])
                session.invalidateAndCancel()
            }
        }

        /// With no app attached, the daemon's default handling finds the permanent credential in the app's
        /// credential file.
        @Test func aPermanentCredentialAnswersWithoutTheApp() async throws {
            try await withBackgroundServer { fixture, server in
                server.protect("/secret", user: "ada", password: "lovelace", realm: "vault", response: .ok("the plans"))
                let storage = URLCredentialStorage(file: fixture.root.appendingPathComponent("credentials.json"))
                storage.setDefaultCredential(
                    URLCredential(user: "ada", password: "lovelace", persistence: .permanent), for: Self.space(server))
                let configuration = fixture.configuration("app.permanent")
                configuration.urlCredentialStorage = storage
                let recorder = BackgroundRecorder()
                let session = await fixture.session(configuration, delegate: recorder)
                let task = session.downloadTask(with: server.url("/secret"))
                task.earliestBeginDate = Date().addingTimeInterval(0.5)
                task.resume()
                try #require(session.backgroundClient).detach()
                await fixture.waitForNoClients()
                await fixture.waitUntilCompleted("app.permanent", task: 1)
                let next = BackgroundRecorder()
                let again = await fixture.session(configuration, delegate: next)
                await next.waitForCompletions(1)
                #expect(next.finished.first?.bytes == Data("the plans".utf8), "\(fixture.daemonLog)")
                #expect(next.challengesSeen.isEmpty)
                #expect(server.requests(path: "/secret").count == 2)
                again.invalidateAndCancel()
            }
        }

        /// The app's persistent jar is the daemon's: its cookies (and the app's session cookies) go with the request,
        /// and a cookie the server sets is in the jar afterwards.
        @Test func cookiesGoBothWays() async throws {
            try await withBackgroundServer { fixture, server in
                var fresh = MockResponse.ok("fed")
                fresh.headers.append((name: "Set-Cookie", value: "fresh=yes; Max-Age=3600; Path=/"))
                server.route("/cookies", response: fresh)
                let jar = fixture.root.appendingPathComponent("jar")
                let storage = HTTPCookieStorage(persistentIn: jar)
                for (name, expires) in [("kept", Date().addingTimeInterval(3600)), ("visit", nil)] {
                    var properties: [HTTPCookiePropertyKey: Any] = [
                        .name: name, .value: "1", .domain: "127.0.0.1", .path: "/",
                    ]
                    properties[.expires] = expires
                    storage.setCookie(try #require(HTTPCookie(properties: properties)))
                }
                let configuration = fixture.configuration("app.cookies")
                configuration.httpCookieStorage = storage
                let recorder = BackgroundRecorder()
                let session = await fixture.session(configuration, delegate: recorder)
                session.downloadTask(with: server.url("/cookies")).resume()
                await recorder.waitForCompletions(1)
                #expect(recorder.errors[1] == .some(nil), "\(fixture.daemonLog)")
                let sent = server.requests(path: "/cookies").first?.header("Cookie") ?? ""
                #expect(sent.contains("kept=1") && sent.contains("visit=1"), "\(sent)")
                var names: [String] = []
                for _ in 0..<250 {
                    names = HTTPCookieStorage(persistentIn: jar).cookies?.map(\.name) ?? []
                    if names.contains("fresh") { break }
                    try await Task.sleep(for: .milliseconds(20))
                }
                #expect(names.contains("fresh"), "\(names)")
                session.invalidateAndCancel()
            }
        }

        /// `connectionProxyDictionary` travels: the daemon's request goes through the proxy.
        @Test func theProxyIsTheDaemonsToo() async throws {
            let fixture = try BackgroundFixture()
            let proxy = MockProxy()
            try await proxy.start()
            try await withServer { origin in
                origin.route("/p", response: .ok("via proxy"))
                let configuration = fixture.configuration("app.proxy")
                configuration.connectionProxyDictionary = [
                    "HTTPEnable": 1, "HTTPProxy": "127.0.0.1", "HTTPPort": proxy.port,
                ]
                let recorder = BackgroundRecorder()
                let session = await fixture.session(configuration, delegate: recorder)
                session.downloadTask(with: origin.url("/p")).resume()
                await recorder.waitForCompletions(1)
                #expect(recorder.finished.first?.bytes == Data("via proxy".utf8), "\(fixture.daemonLog)")
                #expect(proxy.requests.first?.target == origin.url("/p").absoluteString)
                session.invalidateAndCancel()
            }
            try await proxy.shutdown()
            await fixture.tearDown()
        }
    }
}
