import CourierHTTP
import Foundation
import Testing

@testable import Courier

/// The defaults Darwin sends, added by ``HeaderDefaultsStage``: a request without fields of its own takes a shared
/// set, and must end up with the same fields, in the same order, as one whose fields are added one by one.
@Suite("Header defaults stage")
struct HeaderDefaultsStageTests {
    private func context(_ request: URLRequest, _ configuration: URLSessionConfiguration = .ephemeral) -> StageContext {
        StageContext(
            configuration: configuration,
            settings: StageSettings(configuration),
            task: nil,
            currentRequest: request,
            redirectCount: 0,
            asksForRedirects: true,
            asksForResponses: true,
            decider: NoDecisions()
        )
    }

    private struct NoDecisions: TaskDecider {
        func decide(_ decision: TaskDecision) async -> TaskDecisionAnswer? { nil }
    }

    private func fields(of request: URLRequest, _ configuration: URLSessionConfiguration = .ephemeral) throws
        -> [(String, String)]
    {
        let step = try HeaderDefaultsStage().immediate(request, in: context(request, configuration))
        guard case .proceed(let out)? = step else {
            Issue.record("the stage did not proceed")
            return []
        }
        return out.headerFields.pairs
    }

    private let defaults = [
        ("Accept", "*/*"), ("Accept-Encoding", "gzip, deflate, br"), ("User-Agent", HeaderDefaultsStage.userAgent),
    ]

    @Test func aRequestWithoutFieldsGetsTheThreeDefaultsInOrder() throws {
        let request = URLRequest(url: try #require(URL(string: "http://127.0.0.1/")))
        let got = try fields(of: request)
        #expect(got.map(\.0) == defaults.map(\.0))
        #expect(got.map(\.1) == defaults.map(\.1))
    }

    /// A field of the request's own comes first and the defaults follow it, as when the request started empty.
    @Test func aRequestWithAFieldKeepsItAndGetsTheDefaultsAfterIt() throws {
        var request = URLRequest(url: try #require(URL(string: "http://127.0.0.1/")))
        request.setValue("1", forHTTPHeaderField: "X-Trace")
        let got = try fields(of: request)
        #expect(got.map(\.0) == ["X-Trace"] + defaults.map(\.0))
    }

    /// The request's own values win over the defaults, and the shared set is not used for it.
    @Test func theRequestsOwnValuesWin() throws {
        var request = URLRequest(url: try #require(URL(string: "http://127.0.0.1/")))
        request.setValue("text/plain", forHTTPHeaderField: "Accept")
        request.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        request.setValue("mine/2", forHTTPHeaderField: "User-Agent")
        let got = try fields(of: request)
        #expect(got.map(\.1) == ["text/plain", "identity", "mine/2"])
    }

    /// The session's additional headers arrive before the defaults are considered: a request without fields of its
    /// own but with a session `User-Agent` keeps the session's.
    @Test func theSessionsAdditionalHeadersAreNotReplacedByTheSharedSet() throws {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpAdditionalHeaders = ["User-Agent": "session/3"]
        let request = URLRequest(url: try #require(URL(string: "http://127.0.0.1/")))
        let got = try fields(of: request, configuration)
        #expect(got.first { $0.0 == "User-Agent" }?.1 == "session/3")
        #expect(got.count == 3)
    }

    /// A request changed after taking the shared set copies it: the next request still gets the defaults alone.
    @Test func changingARequestThatTookTheSharedSetLeavesTheSetAlone() throws {
        let request = URLRequest(url: try #require(URL(string: "http://127.0.0.1/")))
        guard case .proceed(var first)? = try HeaderDefaultsStage().immediate(request, in: context(request)) else {
            Issue.record("the stage did not proceed")
            return
        }
        first.setValue("changed", forHTTPHeaderField: "Accept")
        first.setValue("b=2", forHTTPHeaderField: "Cookie")
        let second = try fields(of: request)
        #expect(second.map(\.1) == defaults.map(\.1))
        #expect(HeaderDefaultsStage.defaultFields.count == 3)
    }
}
