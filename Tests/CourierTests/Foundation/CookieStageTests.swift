import Courier
import Foundation
import Testing

/// `CookieStage.storeCookies(from:for:)`, called the way the engine calls it when a response head arrives.
@Suite("Cookie storage from responses")
struct CookieStageTests {
    private func response(_ url: URL, setCookie: String) throws -> HTTPURLResponse {
        try #require(
            HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: ["Set-Cookie": setCookie])
        )
    }

    @Test func storesASetCookieCookieInTheSessionsStorage() throws {
        let url = try #require(URL(string: "http://example.com/account/login"))
        let session = makeSession()
        defer { session.invalidateAndCancel() }
        let task = session.dataTask(with: url)
        CookieStage.storeCookies(from: try response(url, setCookie: "session=abc; Path=/account; HttpOnly"), for: task)

        let storage = try #require(session.configuration.httpCookieStorage)
        let stored = try #require(storage.cookies?.first)
        #expect(storage.cookies?.count == 1)
        #expect(stored.name == "session")
        #expect(stored.value == "abc")
        #expect(stored.path == "/account")
        #expect(stored.domain == "example.com")
        #expect(stored.isHTTPOnly)
    }

    @Test func storesNothingWhenCookiesAreOffOrRefused() throws {
        let url = try #require(URL(string: "http://example.com/"))
        let refusing: [(String, (URLSessionConfiguration) -> Void, (inout URLRequest) -> Void)] = [
            ("httpShouldSetCookies", { $0.httpShouldSetCookies = false }, { _ in }),
            ("httpShouldHandleCookies", { _ in }, { $0.httpShouldHandleCookies = false }),
            ("accept policy never", { $0.httpCookieAcceptPolicy = .never }, { _ in }),
            (
                "other main document", { $0.httpCookieAcceptPolicy = .onlyFromMainDocumentDomain },
                { $0.mainDocumentURL = URL(string: "http://elsewhere.org/") }
            ),
        ]
        for (label, configure, adjustRequest) in refusing {
            let storage = HTTPCookieStorage()
            let session = makeSession { configuration in
                configuration.httpCookieStorage = storage
                configure(configuration)
            }
            var request = URLRequest(url: url)
            adjustRequest(&request)
            let task = session.dataTask(with: request)
            CookieStage.storeCookies(from: try response(url, setCookie: "a=b"), for: task)
            #expect(storage.cookies?.isEmpty == true, "\(label)")
            session.invalidateAndCancel()
        }
    }

    @Test func mainDocumentPolicyAcceptsTheSameDomain() throws {
        let url = try #require(URL(string: "http://api.example.com/"))
        let storage = HTTPCookieStorage()
        let session = makeSession { configuration in
            configuration.httpCookieStorage = storage
            configuration.httpCookieAcceptPolicy = .onlyFromMainDocumentDomain
        }
        defer { session.invalidateAndCancel() }
        var request = URLRequest(url: url)
        request.mainDocumentURL = URL(string: "http://example.com/")
        CookieStage.storeCookies(from: try response(url, setCookie: "a=b"), for: session.dataTask(with: request))
        #expect(storage.cookies?.map(\.name) == ["a"])
    }

    /// RFC 6265bis §5.7: a plain-HTTP response can neither set a Secure cookie nor overwrite or shadow one.
    @Test func aNonSecureOriginCannotSetOrOverwriteSecureCookies() throws {
        let plain = try #require(URL(string: "http://example.com/app/page"))
        let secure = try #require(URL(string: "https://example.com/app/page"))
        let storage = HTTPCookieStorage()
        let session = makeSession { $0.httpCookieStorage = storage }
        defer { session.invalidateAndCancel() }

        CookieStage.storeCookies(
            from: try response(plain, setCookie: "s=1; Secure"), for: session.dataTask(with: plain))
        #expect(storage.cookies?.isEmpty == true)

        CookieStage.storeCookies(
            from: try response(secure, setCookie: "id=good; Secure; Path=/"), for: session.dataTask(with: secure))
        #expect(storage.cookies?.map(\.value) == ["good"])

        // Same name: overwrite (same path) and shadow (a longer path) are both ignored; another name is stored.
        for attack in ["id=evil; Path=/", "id=evil; Path=/app", "id=evil; Domain=example.com"] {
            CookieStage.storeCookies(from: try response(plain, setCookie: attack), for: session.dataTask(with: plain))
        }
        CookieStage.storeCookies(from: try response(plain, setCookie: "theme=dark"), for: session.dataTask(with: plain))
        let stored = Dictionary(uniqueKeysWithValues: (storage.cookies ?? []).map { ($0.name, $0.value) })
        #expect(stored == ["id": "good", "theme": "dark"])
        // Over HTTPS the Secure cookie can still be replaced.
        CookieStage.storeCookies(
            from: try response(secure, setCookie: "id=newer; Secure; Path=/"), for: session.dataTask(with: secure))
        #expect(storage.cookies?.first { $0.name == "id" }?.value == "newer")
    }
}
