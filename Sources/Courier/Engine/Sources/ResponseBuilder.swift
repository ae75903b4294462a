import CourierHTTP
import CourierTransport
import Foundation

/// Builds the `HTTPURLResponse` of a response head: repeated header names are joined with ", " as Darwin does.
enum ResponseBuilder {
    static func makeResponse(head: TransportResponseHead, url: URL) -> HTTPURLResponse? {
        guard (100...999).contains(head.status) else { return nil }
        // The ordered pairs go straight in: no detour through a Swift dictionary and back.
        return HTTPURLResponse(
            url: url, statusCode: head.status, httpVersion: head.version, headerFieldPairs: head.headers)
    }
}
