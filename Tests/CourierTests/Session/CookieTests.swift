import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

/// The request side of cookies: the session's storage feeds the `Cookie` header.
@Suite("Cookies sent with requests")
struct CookieTests {
    private func cookie(_ name: String, value: String, domain: String, path: String = "/") throws -> HTTPCookie {
        try #require(HTTPCookie(properties: [.name: name, .value: value, .domain: domain, .path: path]))
    }

    /// A session whose own storage holds `cookies`.
    private func session(with cookies: [HTTPCookie], _ adjust: (URLSessionConfiguration) -> Void = { _ in })
        -> URLSession
    {
        makeSession { configuration in
            let storage = HTTPCookieStorage()
            for cookie in cookies {
                storage.setCookie(cookie)
            }
            configuration.httpCookieStorage = storage
            adjust(configuration)
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func matchingCookiesAreSentOnlyToTheirPathAndHost(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.route("/cookies/app/page", response: .ok("page"))
            server.route("/elsewhere", response: .ok("elsewhere"))
            let session = try session(with: [
                cookie("app", value: "1", domain: "127.0.0.1", path: "/cookies/app"),
                cookie("root", value: "2", domain: "127.0.0.1"),
                cookie("foreign", value: "3", domain: "example.invalid"),
            ])
            defer { session.finishTasksAndInvalidate() }

            _ = await session.runDataTask(server.url("/cookies/app/page"))
            _ = await session.runDataTask(server.url("/elsewhere"))
            let page = try #require(server.requests(path: "/cookies/app/page").first)
            #expect(page.headers("Cookie") == ["app=1; root=2"])
            let elsewhere = try #require(server.requests(path: "/elsewhere").first)
            #expect(elsewhere.headers("Cookie") == ["root=2"])
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func noCookiesWhenTheRequestOrSessionTurnsThemOff(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.route("/cookies/off", response: .ok("off"))
            let stored = try cookie("id", value: "1", domain: "127.0.0.1")

            let session = session(with: [stored])
            defer { session.finishTasksAndInvalidate() }
            var request = URLRequest(url: server.url("/cookies/off"))
            request.httpShouldHandleCookies = false
            _ = await session.runDataTask(request)

            let sessionOff = self.session(with: [stored]) { $0.httpShouldSetCookies = false }
            defer { sessionOff.finishTasksAndInvalidate() }
            _ = await sessionOff.runDataTask(server.url("/cookies/off"))

            let noStorage = self.session(with: []) { $0.httpCookieStorage = nil }
            defer { noStorage.finishTasksAndInvalidate() }
            _ = await noStorage.runDataTask(server.url("/cookies/off"))

            let recorded = server.requests(path: "/cookies/off")
            #expect(recorded.count == 3)
            #expect(recorded.allSatisfy { $0.header("Cookie") == nil })
        }
    }

    @Test(arguments: WireProtocol.allCases)
    func aCookieHeaderOfTheRequestIsKept(over wire: WireProtocol) async throws {
        try await withServer(wire) { server in
            server.route("/cookies/own", response: .ok("own"))
            let session = try session(with: [cookie("stored", value: "1", domain: "127.0.0.1")])
            defer { session.finishTasksAndInvalidate() }
            var request = URLRequest(url: server.url("/cookies/own"))
            request.setValue("mine=2", forHTTPHeaderField: "Cookie")
            _ = await session.runDataTask(request)
            let recorded = try #require(server.requests(path: "/cookies/own").first)
            #expect(recorded.headers("Cookie") == ["mine=2"])
        }
    }
}
