import Foundation
import Testing

@testable import courier

/// `courier -G`: the `-d` data joins the URL's query as given, with what a query cannot hold percent-encoded.
@Suite("courier -G query data")
struct QueryDataTests {
    @Test(arguments: [
        ("http://h/s", "q=a%20b&tag=x y", "http://h/s?q=a%20b&tag=x%20y"),
        ("http://h/s?lang=en", "q=1", "http://h/s?lang=en&q=1"),
        ("http://h/s", "note=100%", "http://h/s?note=100%25"),
        // An escape beside a stray `%`: only the stray one is encoded (it used to encode both).
        ("http://h/s", "q=a%20b&p=100%", "http://h/s?q=a%20b&p=100%25"),
        ("http://h/s", "p=%zz%4", "http://h/s?p=%25zz%254"),
        ("http://h/s", "", "http://h/s"),
    ])
    func theDataJoinsTheQuery(url: String, data: String, expected: String) throws {
        let base = try #require(URL(string: url))
        #expect(TransferSettings.url(base, appendingQuery: Data(data.utf8)).absoluteString == expected)
    }
}
