import CourierHTTP
import CourierTransport
import Foundation

/// Builds the `HTTPURLResponse` of a response head: repeated header names are joined with ", " as Darwin does.
enum ResponseBuilder {
    static func makeResponse(head: TransportResponseHead, url: URL) -> HTTPURLResponse? {
        var fields = HeaderFieldDictionary()
        for (name, value) in head.headers {
            fields.add(value, for: name)
        }
        return HTTPURLResponse(
            url: url, statusCode: head.status, httpVersion: head.version, headerFields: fields.dictionary)
    }
}
