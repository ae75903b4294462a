import CourierHTTP
import Foundation
import Testing

@Suite("RedirectPolicy")
struct RedirectPolicyTests {
    struct Row: Sendable, CustomTestStringConvertible {
        let status: Int
        let method: String
        let newMethod: String
        let dropsBody: Bool
        var testDescription: String { "\(status) \(method)" }
    }

    static let rows: [Row] = [
        Row(status: 301, method: "POST", newMethod: "GET", dropsBody: true),
        Row(status: 302, method: "POST", newMethod: "GET", dropsBody: true),
        Row(status: 303, method: "POST", newMethod: "GET", dropsBody: true),
        Row(status: 303, method: "PUT", newMethod: "GET", dropsBody: true),
        Row(status: 303, method: "HEAD", newMethod: "GET", dropsBody: true),
        Row(status: 305, method: "POST", newMethod: "POST", dropsBody: false),
        Row(status: 306, method: "PUT", newMethod: "PUT", dropsBody: false),
        Row(status: 302, method: "HEAD", newMethod: "HEAD", dropsBody: false),
        Row(status: 301, method: "PUT", newMethod: "PUT", dropsBody: false),
        Row(status: 302, method: "GET", newMethod: "GET", dropsBody: false),
        Row(status: 307, method: "POST", newMethod: "POST", dropsBody: false),
        Row(status: 308, method: "PUT", newMethod: "PUT", dropsBody: false),
    ]

    @Test(arguments: rows)
    func methodRewriting(row: Row) throws {
        let current = try #require(URL(string: "http://a.example/x/y"))
        let plan = try #require(
            RedirectPolicy.plan(status: row.status, location: "/z", method: row.method, currentURL: current)
        )
        #expect(plan.method == row.newMethod)
        #expect(plan.dropsBody == row.dropsBody)
        #expect(plan.url.absoluteString == "http://a.example/z")
        #expect(plan.removedHeaderNames.contains("Content-Type") == row.dropsBody)
    }

    @Test(arguments: [200, 300, 304, 309, 404])
    func nonRedirectStatusesAreNotFollowed(status: Int) throws {
        let current = try #require(URL(string: "http://a.example/"))
        #expect(RedirectPolicy.plan(status: status, location: "/z", method: "GET", currentURL: current) == nil)
    }

    @Test(arguments: [nil, "", "   ", "http:///no-host"])
    func missingOrUnfollowableLocations(location: String?) throws {
        let current = try #require(URL(string: "http://a.example/"))
        #expect(RedirectPolicy.plan(status: 302, location: location, method: "GET", currentURL: current) == nil)
    }

    /// A `Location` of another scheme has a plan, so that the delegate is asked about it as on Darwin (an OAuth
    /// callback such as `myapp://callback?code=…`), but it is never loaded: following it fails.
    @Test(arguments: [
        "myapp://callback?code=abc", "myapp:callback", "ftp://a.example/file", "javascript:alert(1)",
        "file:///etc/passwd", "data:text/plain,hi",
    ])
    func otherSchemesArePlannedButNotLoadable(location: String) throws {
        let current = try #require(URL(string: "http://a.example/"))
        let plan = try #require(
            RedirectPolicy.plan(status: 302, location: location, method: "GET", currentURL: current))
        #expect(plan.url.absoluteString == location)
        // Another origin: credentials never go along.
        #expect(plan.removedHeaderNames.contains("Authorization"))
        #expect(RedirectPolicy.refusesRedirect(from: current, to: plan.url))
    }

    /// Refused: leaving http(s) or a socket for anything else. Not refused: http(s) targets, the same socket, and a
    /// request that was not on http to begin with (a custom protocol's download asked for again after a `Range` the
    /// server ignored goes through the same path, and was refused by the first version of this rule).
    @Test(arguments: [
        ("https://a.example/", "http://b.example/x", false),
        ("http://a.example/", "HTTPS://b.example/", false),
        ("http+unix://%2Frun%2Fa.sock/x", "http+unix://%2Frun%2Fa.sock/y", false),
        ("http+unix://%2Frun%2Fa.sock/x", "http+unix://%2Frun%2Fb.sock/y", true),
        ("https://a.example/", "mock://a.example/x", true),
        ("mock://a.example/x", "mock://a.example/x", false),
        ("mock://a.example/x", "file:///etc/passwd", false),
    ])
    func whichRedirectsAreRefused(current: String, target: String, refused: Bool) throws {
        let from = try #require(URL(string: current))
        let to = try #require(URL(string: target))
        #expect(RedirectPolicy.refusesRedirect(from: from, to: to) == refused)
    }

    /// A Unix socket is only ever reached by a URL that was on it: never by a redirect from the web (a server could
    /// otherwise reach the daemons behind local sockets), nor from one socket to another.
    @Test(arguments: [
        ("http+unix://%2Frun%2Fa.sock/x", "/y", true),
        ("http+unix://%2Frun%2Fa.sock/x", "https://web.example/", true),
        ("http://web.example/x", "http+unix://%2Fvar%2Frun%2Fdocker.sock/containers/json", false),
        ("https://web.example/x", "https+unix://%2Fvar%2Frun%2Fdocker.sock/", false),
        ("http+unix://%2Frun%2Fa.sock/x", "http+unix://%2Frun%2Fb.sock/x", false),
    ])
    func unixSocketsAreReachedOnlyFromThemselves(current: String, location: String, follows: Bool) throws {
        let url = try #require(URL(string: current))
        let plan = RedirectPolicy.plan(status: 302, location: location, method: "GET", currentURL: url)
        #expect((plan != nil) == follows)
    }

    @Test func relativeLocationsResolveAgainstTheCurrentURL() throws {
        let current = try #require(URL(string: "https://a.example/dir/page?q=1"))
        let plan = try #require(RedirectPolicy.plan(status: 302, location: "next", method: "GET", currentURL: current))
        #expect(plan.url.absoluteString == "https://a.example/dir/next")
    }

    @Test func credentialsNeverCrossOrigins() throws {
        let current = try #require(URL(string: "https://a.example/"))
        let sameOrigin = try #require(
            RedirectPolicy.plan(status: 302, location: "https://a.example:443/b", method: "GET", currentURL: current)
        )
        #expect(!sameOrigin.removedHeaderNames.contains("Authorization"))
        for location in ["https://b.example/", "http://a.example/", "https://a.example:8443/"] {
            let plan = try #require(
                RedirectPolicy.plan(status: 302, location: location, method: "GET", currentURL: current))
            #expect(plan.removedHeaderNames.contains("Authorization"))
            #expect(plan.removedHeaderNames.contains("Proxy-Authorization"))
            #expect(plan.removedHeaderNames.contains("Cookie"))
        }
    }
}
