import CourierTransport
import Foundation
import Testing

@testable import Courier

/// Events, decisions and answers survive a JSON round trip (the background daemon will journal them and send them
/// to the app).
@Suite("Task events as data")
struct TaskEventCodingTests {
    private let url = URL(string: "https://example.test/a?b=c")!

    private func roundTrip<T: Codable>(_ value: T) throws -> T {
        try JSONDecoder().decode(T.self, from: try JSONEncoder().encode(value))
    }

    @Test func aRequestKeepsItsFieldsInOrder() throws {
        var request = URLRequest(url: url, timeoutInterval: 12)
        request.httpMethod = "POST"
        request.addValue("1", forHTTPHeaderField: "X-B")
        request.addValue("2", forHTTPHeaderField: "X-A")
        request.httpBody = Data("body".utf8)
        request.httpShouldHandleCookies = false
        request.cachePolicy = .reloadIgnoringLocalCacheData
        guard case .currentRequest(let decoded) = try roundTrip(TaskEvent.currentRequest(request)) else {
            Issue.record("wrong event")
            return
        }
        #expect(decoded.url == url)
        #expect(decoded.httpMethod == "POST")
        #expect(decoded.headerFields.map(\.name) == ["X-B", "X-A"])
        #expect(decoded.httpBody == Data("body".utf8))
        #expect(decoded.timeoutInterval == 12)
        #expect(!decoded.httpShouldHandleCookies)
        #expect(decoded.cachePolicy == .reloadIgnoringLocalCacheData)
    }

    @Test func anHTTPResponseKeepsStatusVersionAndRepeatedFields() throws {
        let response = HTTPURLResponse(
            url: url, statusCode: 206, httpVersion: "HTTP/1.1",
            headerFieldPairs: [("Set-Cookie", "a=1"), ("Set-Cookie", "b=2"), ("Content-Length", "5")])
        guard case .response(let decoded as HTTPURLResponse) = try roundTrip(TaskEvent.response(response)) else {
            Issue.record("wrong event")
            return
        }
        #expect(decoded.statusCode == 206)
        #expect(decoded.httpVersion == "HTTP/1.1")
        #expect(decoded.headerFields == response.headerFields)
        #expect(decoded.value(forHTTPHeaderField: "Set-Cookie") == "a=1, b=2")
        #expect(decoded.expectedContentLength == 5)
        #expect(decoded.url == url)
    }

    @Test func anInformationalResponseStaysHTTP() throws {
        let response = HTTPURLResponse(
            url: url, statusCode: 103, httpVersion: "HTTP/1.1", headerFieldPairs: [("Link", "</a.css>; rel=preload")])
        guard case .informationalResponse(let decoded) = try roundTrip(TaskEvent.informationalResponse(response))
        else {
            Issue.record("wrong event")
            return
        }
        #expect(decoded.statusCode == 103)
        #expect(decoded.value(forHTTPHeaderField: "Link") == "</a.css>; rel=preload")
    }

    @Test func aFailedCompletionKeepsCodeURLDescriptionAndResumeData() throws {
        let error = URLError(
            .networkConnectionLost,
            userInfo: [NSURLErrorFailingURLErrorKey: url, NSLocalizedDescriptionKey: "gone"])
        let result = TaskResult(error: error, file: nil, resumeData: Data([1, 2, 3]))
        guard case .completed(let decoded) = try roundTrip(TaskEvent.completed(result)) else {
            Issue.record("wrong event")
            return
        }
        #expect(decoded.error?.code == .networkConnectionLost)
        #expect(decoded.error?.failingURL == url)
        #expect(decoded.error?.localizedDescription == "gone")
        #expect(decoded.resumeData == Data([1, 2, 3]))
        #expect(decoded.error?.userInfo[NSURLSessionDownloadTaskResumeData] as? Data == Data([1, 2, 3]))
    }

    @Test func decisionsAndAnswersRoundTrip() throws {
        let response = HTTPURLResponse(url: url, statusCode: 302, httpVersion: nil, headerFieldPairs: [])
        let next = URLRequest(url: URL(string: "https://example.test/next")!)
        guard
            case .decide(.redirect(let decodedResponse, let decodedRequest)) =
                try roundTrip(TaskEvent.decide(.redirect(response, newRequest: next)))
        else {
            Issue.record("wrong event")
            return
        }
        #expect(decodedResponse.statusCode == 302)
        #expect(decodedRequest.url == next.url)
        guard case .response(.becomeDownload) = try roundTrip(TaskDecisionAnswer.response(.becomeDownload)) else {
            Issue.record("wrong answer")
            return
        }
        guard
            case .beginDelayedRequest(.useNewRequest, let replaced?) =
                try roundTrip(TaskDecisionAnswer.beginDelayedRequest(.useNewRequest, next))
        else {
            Issue.record("wrong answer")
            return
        }
        #expect(replaced.url == next.url)
    }

    /// An authentication challenge travels with its space, count, proposed credential and 401; the answer with its
    /// disposition and credential.
    @Test func authenticationQuestionsAndAnswersRoundTrip() throws {
        let unauthorized = HTTPURLResponse(
            url: url, statusCode: 401, httpVersion: nil, headerFieldPairs: [("WWW-Authenticate", "Basic realm=\"r\"")])
        let question = AuthenticationQuestion(
            space: .init(
                host: "example.test", port: 8443, protocol: "https", realm: "r",
                authenticationMethod: NSURLAuthenticationMethodHTTPBasic, proxyType: nil),
            previousFailureCount: 2,
            proposedCredential: .init(user: "u", password: "p:w\"", persistence: .permanent),
            failureResponse: CodableResponse(unauthorized))
        guard case .decide(.authenticate(let decoded)) = try roundTrip(TaskEvent.decide(.authenticate(question))) else {
            Issue.record("wrong event")
            return
        }
        #expect(decoded.space == question.space && decoded.previousFailureCount == 2)
        #expect(decoded.proposedCredential == question.proposedCredential)
        #expect((decoded.failureResponse.response as? HTTPURLResponse)?.statusCode == 401)
        guard
            case .authenticate(.useCredential, let credential?) =
                try roundTrip(TaskDecisionAnswer.authenticate(.useCredential, question.proposedCredential))
        else {
            Issue.record("wrong answer")
            return
        }
        #expect(credential.urlCredential.password == "p:w\"" && credential.urlCredential.persistence == .permanent)
    }

    @Test func progressEventsAndTimelinesRoundTrip() throws {
        var timeline = TransportTimeline(fetchStart: Date(timeIntervalSince1970: 1_000))
        timeline.remotePort = 443
        timeline.protocolName = "http/1.1"
        timeline.responseBodyBytesReceived = 42
        guard case .timeline(let decoded) = try roundTrip(TaskEvent.timeline(timeline)) else {
            Issue.record("wrong event")
            return
        }
        #expect(decoded == timeline)
        guard
            case .downloadWrote(3, 10, 20) = try roundTrip(
                TaskEvent.downloadWrote(bytes: 3, totalWritten: 10, totalExpected: 20))
        else {
            Issue.record("wrong event")
            return
        }
    }
}
