import CourierHTTP
import Foundation
import Testing

@Suite("URLErrorMapping")
struct URLErrorMappingTests {
    @Test(arguments: [
        (TransferError.cancelled(), URLError.Code.cancelled),
        (.badURL("x"), .badURL),
        (.unsupportedURL("x"), .unsupportedURL),
        (.cannotFindHost("x"), .cannotFindHost),
        (.cannotConnectToHost("x"), .cannotConnectToHost),
        (.timedOut("x"), .timedOut),
        (.networkConnectionLost("x"), .networkConnectionLost),
        (.badServerResponse("x"), .badServerResponse),
        (.cannotParseResponse("x"), .cannotParseResponse),
        (.secureConnectionFailed("x"), .secureConnectionFailed),
        (.serverCertificateUntrusted("x"), .serverCertificateUntrusted),
        (.cannotDecodeContentData("x"), .cannotDecodeContentData),
        (.cannotDecodeRawData("x"), .cannotDecodeRawData),
    ])
    func transferErrorsMapToDarwinCodes(error: TransferError, code: URLError.Code) throws {
        let url = try #require(URL(string: "http://a.example/p"))
        let mapped = URLErrorMapping.urlError(from: error, failingURL: url)
        #expect(mapped.code == code)
        #expect(mapped.userInfo[NSURLErrorFailingURLErrorKey] as? URL == url)
        #expect(mapped.userInfo[URLErrorMapping.failingURLStringKey] as? String == "http://a.example/p")
        #expect(mapped.localizedDescription == error.detail)
    }

    @Test func urlErrorsKeepTheirCodeAndGainTheFailingURL() throws {
        let url = try #require(URL(string: "http://a.example/"))
        let mapped = URLErrorMapping.urlError(from: URLError(.httpTooManyRedirects), failingURL: url)
        #expect(mapped.code == .httpTooManyRedirects)
        #expect(mapped.userInfo[NSURLErrorFailingURLErrorKey] as? URL == url)
    }

    @Test func otherErrorsAreUnknownAndCancellationIsCancelled() {
        struct Odd: Error {}
        #expect(URLErrorMapping.urlError(from: Odd(), failingURL: nil).code == .unknown)
        #expect(URLErrorMapping.urlError(from: CancellationError(), failingURL: nil).code == .cancelled)
    }
}
