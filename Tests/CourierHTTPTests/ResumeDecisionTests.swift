import CourierHTTP
import Testing

@Suite("ResumeDecision")
struct ResumeDecisionTests {
    @Test(
        "Decisions",
        arguments: [
            // 206 with a Content-Range that continues the partial file.
            (
                Int64(100), 206, "bytes 100-999/1000" as String?, nil as Int64?,
                ResumeDecision.append(offset: 100, expectedTotal: 1000, finalLength: 1000)
            ),
            (100, 206, "bytes 100-999/1000", 900, .append(offset: 100, expectedTotal: 1000, finalLength: 1000)),
            (100, 206, "BYTES 100-999/1000 ", 900, .append(offset: 100, expectedTotal: 1000, finalLength: 1000)),
            (100, 206, "bytes 100-999/*", nil, .append(offset: 100, expectedTotal: -1, finalLength: 1000)),
            (100, 206, "bytes 100-999/*", 900, .append(offset: 100, expectedTotal: -1, finalLength: 1000)),
            (999, 206, "bytes 999-999/1000", 1, .append(offset: 999, expectedTotal: 1000, finalLength: 1000)),
            // 206 that cannot be trusted.
            (100, 206, nil, 900, .retryWithoutRange),
            (100, 206, "", nil, .retryWithoutRange),
            (100, 206, "garbage", nil, .retryWithoutRange),
            (100, 206, "bytes 0-999/1000", nil, .retryWithoutRange),
            (100, 206, "bytes 101-999/1000", nil, .retryWithoutRange),
            (100, 206, "bytes 50-999/1000", nil, .retryWithoutRange),
            (100, 206, "bytes 100-999/1000", 1000, .retryWithoutRange),
            (100, 206, "bytes 100-999/1000", 899, .retryWithoutRange),
            (100, 206, "bytes 100-999/*", 10, .retryWithoutRange),
            (100, 206, "bytes 100-499/1000", nil, .retryWithoutRange),
            (100, 206, "bytes */1000", nil, .retryWithoutRange),
            (100, 206, "bytes 100-999/999", nil, .retryWithoutRange),
            // A range whose length overflows Int64 is refused, never computed.
            (0, 206, "bytes 0-9223372036854775807/*", nil, .retryWithoutRange),
            (100, 206, "bytes 0-9223372036854775807/*", nil, .retryWithoutRange),
            (-1, 206, "bytes 0-999/1000", nil, .retryWithoutRange),
            // 200: the server sent everything again.
            (100, 200, nil, 1000, .restartFromZero(expectedTotal: 1000)),
            (100, 200, nil, nil, .restartFromZero(expectedTotal: -1)),
            (100, 200, "bytes 100-999/1000", 1000, .restartFromZero(expectedTotal: 1000)),
            (100, 200, nil, 0, .restartFromZero(expectedTotal: 0)),
            (100, 200, nil, -5, .restartFromZero(expectedTotal: -1)),
            // 416: the range is not satisfiable.
            (100, 416, "bytes */50", nil, .retryWithoutRange),
            (100, 416, nil, nil, .retryWithoutRange),
            // Anything else is an ordinary response.
            (100, 404, nil, 10, .notResumable),
            (100, 500, "bytes 100-999/1000", 900, .notResumable),
            (100, 304, nil, nil, .notResumable),
            (100, 412, nil, nil, .notResumable),
            (100, 201, "bytes 100-999/1000", 900, .notResumable),
            (100, 302, nil, nil, .notResumable),
        ])
    func decide(offset: Int64, status: Int, contentRange: String?, contentLength: Int64?, expected: ResumeDecision) {
        // The same representation as the partial file: only the range fields decide.
        let partial = PartialDownload(offset: offset, entityTag: "\"v1\"", lastModified: nil)
        var fields = ["etag": "\"v1\""]
        fields["content-range"] = contentRange
        fields["content-length"] = contentLength.map(String.init)
        let decision = ResumeDecision.decide(resuming: partial, status: status) { fields[$0.lowercased()] }
        #expect(decision == expected)
    }

    /// What the partial file came with, what the 206 carries, and whether the 206 may be appended.
    struct ValidatorCase: Sendable, CustomTestStringConvertible {
        var stored: PartialDownload
        var response: [String: String]
        var appends: Bool
        var testDescription: String { "\(stored) + \(response) -> \(appends ? "append" : "retry")" }
    }

    static let lastModified = "Tue, 15 Nov 1994 12:45:26 GMT"

    static let validatorCases: [ValidatorCase] = [
        // The same strong ETag: append.
        .init(
            stored: .init(offset: 10, entityTag: "\"v1\"", lastModified: nil), response: ["etag": "\"v1\""],
            appends: true),
        .init(
            stored: .init(offset: 10, entityTag: " \"v1\" ", lastModified: nil), response: ["etag": "\"v1\""],
            appends: true),
        // A server that ignored If-Range and sent a range of the new version: never spliced.
        .init(
            stored: .init(offset: 10, entityTag: "\"v1\"", lastModified: nil), response: ["etag": "\"v2\""],
            appends: false),
        .init(
            stored: .init(offset: 10, entityTag: "\"v1\"", lastModified: nil), response: ["etag": "W/\"v1\""],
            appends: false),
        .init(
            stored: .init(offset: 10, entityTag: "\"v1\"", lastModified: nil), response: ["etag": "\"V1\""],
            appends: false),
        .init(
            stored: .init(offset: 10, entityTag: "\"v1\"", lastModified: nil), response: ["etag": "garbage"],
            appends: false),
        // No validator in the 206: nothing shows it is the same version.
        .init(stored: .init(offset: 10, entityTag: "\"v1\"", lastModified: nil), response: [:], appends: false),
        .init(
            stored: .init(offset: 10, entityTag: "\"v1\"", lastModified: lastModified),
            response: ["last-modified": lastModified], appends: false),
        // Last-Modified as the validator (no strong ETag stored).
        .init(
            stored: .init(offset: 10, entityTag: nil, lastModified: lastModified),
            response: ["last-modified": lastModified], appends: true),
        .init(
            stored: .init(offset: 10, entityTag: "W/\"weak\"", lastModified: lastModified),
            response: ["last-modified": lastModified, "etag": "W/\"other\""], appends: true),
        .init(
            stored: .init(offset: 10, entityTag: nil, lastModified: lastModified),
            response: ["last-modified": "Wed, 16 Nov 1994 12:45:26 GMT"], appends: false),
        .init(stored: .init(offset: 10, entityTag: nil, lastModified: lastModified), response: [:], appends: false),
        // No validator stored at all: a range cannot be trusted.
        .init(
            stored: .init(offset: 10, entityTag: nil, lastModified: nil), response: ["etag": "\"v1\""], appends: false),
        // The complete length changed although the validator matched.
        .init(
            stored: .init(offset: 10, entityTag: "\"v1\"", lastModified: nil, totalLength: 90),
            response: ["etag": "\"v1\""], appends: false),
        .init(
            stored: .init(offset: 10, entityTag: "\"v1\"", lastModified: nil, totalLength: 100),
            response: ["etag": "\"v1\""], appends: true),
        .init(
            stored: .init(offset: 10, entityTag: "\"v1\"", lastModified: nil, totalLength: -1),
            response: ["etag": "\"v1\""], appends: true),
    ]

    @Test("A 206 is appended only to the same representation", arguments: validatorCases)
    func validators(_ item: ValidatorCase) {
        var fields = item.response
        fields["content-range"] = "bytes 10-99/100"
        let decision = ResumeDecision.decide(resuming: item.stored, status: 206) { fields[$0.lowercased()] }
        #expect(
            decision == (item.appends ? .append(offset: 10, expectedTotal: 100, finalLength: 100) : .retryWithoutRange))
    }

    @Test(
        "A 206 with an unknown total is appended only up to the end the interrupted response announced",
        arguments: [
            // The interrupted response said 100 bytes: the range must end at byte 99.
            (Int64?(100), "bytes 10-99/*", true),
            (Int64?(100), "bytes 10-59/*", false),
            (Int64?(90), "bytes 10-99/*", false),
            (Int64?(100), "bytes 10-109/*", false),
            // Nothing says how long the representation is: the range's own end is all there is.
            (Int64?(-1), "bytes 10-59/*", true),
            (Int64?.none, "bytes 10-59/*", true),
        ])
    func unknownTotals(storedTotal: Int64?, contentRange: String, appends: Bool) {
        let partial = PartialDownload(offset: 10, entityTag: "\"v1\"", lastModified: nil, totalLength: storedTotal)
        let fields = ["etag": "\"v1\"", "content-range": contentRange]
        let decision = ResumeDecision.decide(resuming: partial, status: 206) { fields[$0.lowercased()] }
        let end = Int64(contentRange.split(separator: "-")[1].split(separator: "/")[0])! + 1
        #expect(decision == (appends ? .append(offset: 10, expectedTotal: -1, finalLength: end) : .retryWithoutRange))
    }

    @Test(
        "A 206 in a content coding is never appended: the decoded bytes are not the ones the range counts",
        arguments: [
            ("gzip", false), ("br", false), ("deflate", false), ("identity, gzip", false), ("x-custom", false),
            ("identity", true), ("", true), (" IDENTITY ", true),
        ])
    func contentCodings(coding: String, appends: Bool) {
        let partial = PartialDownload(offset: 10, entityTag: "\"v1\"", lastModified: nil)
        let fields = ["etag": "\"v1\"", "content-range": "bytes 10-99/100", "content-encoding": coding]
        let decision = ResumeDecision.decide(resuming: partial, status: 206) { fields[$0.lowercased()] }
        #expect(decision == (appends ? .append(offset: 10, expectedTotal: 100, finalLength: 100) : .retryWithoutRange))
    }
}
