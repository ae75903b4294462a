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
                ResumeDecision.append(offset: 100, expectedTotal: 1000)
            ),
            (100, 206, "bytes 100-999/1000", 900, .append(offset: 100, expectedTotal: 1000)),
            (100, 206, "BYTES 100-999/1000 ", 900, .append(offset: 100, expectedTotal: 1000)),
            (100, 206, "bytes 100-999/*", nil, .append(offset: 100, expectedTotal: -1)),
            (100, 206, "bytes 100-999/*", 900, .append(offset: 100, expectedTotal: -1)),
            (999, 206, "bytes 999-999/1000", 1, .append(offset: 999, expectedTotal: 1000)),
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
        let decision = ResumeDecision.decide(
            requestedOffset: offset,
            status: status,
            contentRange: contentRange,
            contentLength: contentLength
        )
        #expect(decision == expected)
    }
}
