import CourierHTTP
import Testing

@Suite("HTTPStatusText")
struct HTTPStatusTextTests {
    @Test(
        "Reason phrases",
        arguments: [
            (200, "OK"), (201, "Created"), (204, "No Content"), (301, "Moved Permanently"), (304, "Not Modified"),
            (308, "Permanent Redirect"), (404, "Not Found"), (418, "Client Error"), (429, "Too Many Requests"),
            (500, "Internal Server Error"), (599, "Server Error"), (150, "Informational"), (299, "Success"),
            (399, "Redirection"), (42, "Unknown"), (600, "Unknown"),
        ])
    func reasonPhrase(code: Int, phrase: String) {
        #expect(HTTPStatusText.reasonPhrase(for: code) == phrase)
    }

    @Test(
        "Darwin's localized descriptions",
        arguments: [
            (100, "continue"), (101, "switching protocols"), (102, "informational"), (200, "no error"),
            (201, "created"), (206, "partial content"), (226, "success"), (301, "moved permanently"),
            (302, "found"), (305, "needs proxy"), (306, "redirected"), (307, "temporarily redirected"),
            (308, "redirected"), (400, "bad request"), (404, "not found"), (410, "no longer exists"),
            (414, "requested URL too long"), (418, "client error"), (429, "client error"),
            (500, "internal server error"), (501, "unimplemented"), (504, "gateway timed out"),
            (505, "unsupported version"), (511, "server error"), (0, "server error"), (99, "server error"),
            (600, "server error"), (-1, "server error"),
        ])
    func localized(code: Int, text: String) {
        #expect(HTTPStatusText.localizedDescription(forStatusCode: code) == text)
    }
}
