/// Produces responses for a resource registered with
/// ``MockServer/serveResource(_:body:etag:lastModified:contentType:)``: conditional requests, `Range` and `If-Range`.
struct ResourceResponder: Sendable {
    let body: MockBody
    let etag: String?
    let lastModified: String?
    let contentType: String

    /// The response to `request`.
    func response(for request: RecordedRequest) -> MockResponse {
        let method = request.method.uppercased()
        guard method == "GET" || method == "HEAD" else {
            return MockResponse(status: 405, headers: [("Allow", "GET, HEAD")])
        }
        let length = body.length
        var headers: [(name: String, value: String)] = [("Accept-Ranges", "bytes")]
        if let etag {
            headers.append(("ETag", etag))
        }
        if let lastModified {
            headers.append(("Last-Modified", lastModified))
        }

        if isNotModified(request) {
            return MockResponse(status: 304, headers: headers)
        }

        guard method == "GET", let rangeValue = request.header("Range"),
            let range = ByteRangeRequest(headerValue: rangeValue), ifRangeMatches(request)
        else {
            return MockResponse(status: 200, headers: headers + [("Content-Type", contentType)], body: body)
        }
        guard let bytes = range.resolve(length: length) else {
            headers.append(("Content-Range", "bytes */\(length)"))
            return MockResponse(status: 416, headers: headers)
        }
        headers.append(("Content-Type", contentType))
        headers.append(("Content-Range", "bytes \(bytes.lowerBound)-\(bytes.upperBound - 1)/\(length)"))
        var response = MockResponse(status: 206, headers: headers, body: body)
        response.bodyRange = bytes
        return response
    }

    /// `If-None-Match` (weak comparison), or else `If-Modified-Since` (exact match of the date), says the client's
    /// copy is current.
    private func isNotModified(_ request: RecordedRequest) -> Bool {
        if let ifNoneMatch = request.header("If-None-Match") {
            guard let etag else { return false }
            let tags = ifNoneMatch.split(separator: ",").map { String($0).trimmingSpaces() }
            return tags.contains("*") || tags.contains { Self.opaqueTag($0) == Self.opaqueTag(etag) }
        }
        if let since = request.header("If-Modified-Since"), let lastModified {
            return since.trimmingSpaces() == lastModified
        }
        return false
    }

    /// `If-Range` is absent, or matches the current validator: a strong entity-tag equal to ``etag``,
    /// or a date equal to ``lastModified``.
    private func ifRangeMatches(_ request: RecordedRequest) -> Bool {
        guard let ifRange = request.header("If-Range")?.trimmingSpaces() else { return true }
        if ifRange.hasPrefix("\"") || ifRange.hasPrefix("W/") {
            guard let etag, !etag.hasPrefix("W/"), !ifRange.hasPrefix("W/") else { return false }
            return ifRange == etag
        }
        return ifRange == lastModified
    }

    private static func opaqueTag(_ tag: String) -> String {
        tag.hasPrefix("W/") ? String(tag.dropFirst(2)) : tag
    }
}
