import CourierHTTP
import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import Courier

/// ``StageChain`` with fake stages: the order, the split between stages that answer at once and stages that wait,
/// short-circuits, follow-ups and failures.
@Suite("Stage chain")
struct StageChainTests {
    private let request = URLRequest(url: URL(string: "http://example.test/")!)

    private func context(decide: @escaping @Sendable (TaskDecision) async -> TaskDecisionAnswer? = { _ in nil })
        -> StageContext
    {
        StageContext(
            configuration: .ephemeral,
            settings: StageSettings(.ephemeral),
            task: nil,
            currentRequest: request,
            redirectCount: 0,
            asksForRedirects: true,
            asksForResponses: true,
            decider: ClosureDecider(decide: decide)
        )
    }

    private struct ClosureDecider: TaskDecider {
        let decide: @Sendable (TaskDecision) async -> TaskDecisionAnswer?
        func decide(_ decision: TaskDecision) async -> TaskDecisionAnswer? { await decide(decision) }
    }

    /// Waits for `run`'s outcome; `immediately` when no stage waited.
    private func outcome<Step>(of run: ChainRun<Step>) async -> (Result<Step, TransferError>, immediately: Bool) {
        switch run {
        case .done(let result):
            return (result, true)
        case .waits(let rest):
            let result = await withCheckedContinuation { continuation in
                rest { continuation.resume(returning: $0) }
            }
            return (result, false)
        }
    }

    /// Runs the request side and waits for its outcome.
    private func runRequest(_ stages: [any RequestStage]) async -> (Result<RequestStep, TransferError>, Bool) {
        await outcome(of: StageChain.runRequestSide(request, stages: stages, context: context()))
    }

    private func runResponse(
        _ stages: [any ResponseStage],
        decide: @escaping @Sendable (TaskDecision) async -> TaskDecisionAnswer? = { _ in nil }
    ) async -> (Result<ResponseStep, TransferError>, immediately: Bool, waits: Bool) {
        let response = HTTPURLResponse(url: request.url!, statusCode: 200, httpVersion: nil, headerFields: nil)!
        let (result, immediately) = await outcome(
            of: StageChain.runResponseSide(response, stages: stages, context: context(decide: decide)))
        return (result, immediately, !immediately)
    }

    /// Stages that answer at once run in order, before the call returns.
    @Test func immediateStagesRunInOrderBeforeTheCallReturns() async {
        let log = Log()
        let (result, immediately) = await runRequest([Tagging("a", log), Tagging("b", log), Tagging("c", log)])
        #expect(immediately)
        #expect(log.entries == ["a", "b", "c"])
        guard case .success(.proceed(let prepared)) = result else {
            Issue.record("expected a request, got \(result)")
            return
        }
        #expect(prepared.value(forHTTPHeaderField: "X-Stages") == "a,b,c")
    }

    /// From the first stage that waits, the rest run asynchronously, still in order.
    @Test func aWaitingStageMovesTheRestOffTheCaller() async {
        let log = Log()
        let (result, immediately) = await runRequest([Tagging("a", log), Waiting("w", log), Tagging("c", log)])
        #expect(!immediately)
        #expect(log.entries == ["a", "w", "c"])
        guard case .success(.proceed(let prepared)) = result else {
            Issue.record("expected a request, got \(result)")
            return
        }
        #expect(prepared.value(forHTTPHeaderField: "X-Stages") == "a,w,c")
    }

    /// A stage that answers without the network ends the request side; later stages never run.
    @Test func aShortCircuitSkipsTheLaterStages() async {
        let log = Log()
        let (result, _) = await runRequest([Tagging("a", log), Answering(), Tagging("never", log)])
        #expect(log.entries == ["a"])
        guard case .success(.respond) = result else {
            Issue.record("expected a source, got \(result)")
            return
        }
    }

    /// A stage's failure fails the chain; later stages never run (also after waiting).
    @Test(arguments: [false, true])
    func aStageFailureStopsTheChain(afterWaiting: Bool) async {
        let log = Log()
        let first: any RequestStage = afterWaiting ? Waiting("w", log) : Tagging("a", log)
        let (result, _) = await runRequest([first, Failing(), Tagging("never", log)])
        #expect(!log.entries.contains("never"))
        guard case .failure(let error) = result else {
            Issue.record("expected a failure, got \(result)")
            return
        }
        #expect(error.urlErrorCode == .badURL)
    }

    /// A response stage asking for a follow-up ends the response side.
    @Test func aFollowUpEndsTheResponseSide() async {
        let log = Log()
        let (result, immediately, waits) = await runResponse([FollowingUp(), ResponseTagging("never", log)])
        #expect(immediately)
        #expect(!waits)
        #expect(log.entries.isEmpty)
        guard case .success(.followUp(let next, let dropsBody)) = result else {
            Issue.record("expected a follow-up, got \(result)")
            return
        }
        #expect(next.url?.path == "/next")
        #expect(dropsBody)
    }

    /// The response side says synchronously whether it waits (the engine then pauses the source).
    @Test func theResponseSideReportsThatItWaits() async {
        let log = Log()
        let (result, immediately, waits) = await runResponse([ResponseTagging("a", log), DispositionStage()]) { _ in
            .response(.allow)
        }
        #expect(waits)
        #expect(!immediately)
        guard case .success(.proceed) = result else {
            Issue.record("expected the response, got \(result)")
            return
        }
    }

    /// A decision that ends without an answer (the task was cancelled or timed out) fails the waiting stage.
    @Test func aDecisionWithoutAnAnswerFailsTheStage() async {
        let (result, _, _) = await runResponse([DispositionStage()]) { _ in nil }
        guard case .failure(let error) = result else {
            Issue.record("expected a failure, got \(result)")
            return
        }
        #expect(error.urlErrorCode == .cancelled)
    }

    /// `.becomeDownload` is carried past later stages to the end.
    @Test func becomeDownloadIsCarriedToTheEnd() async {
        let log = Log()
        let (result, _, _) = await runResponse([DispositionStage(), ResponseTagging("after", log)]) { _ in
            .response(.becomeDownload)
        }
        #expect(log.entries == ["after"])
        guard case .success(.proceedAsDownload) = result else {
            Issue.record("expected a download, got \(result)")
            return
        }
    }

    /// The engine's chain lists the request and response stages in the documented order.
    @Test func theChainListsTheStagesInOrder() {
        let requestSide = StageChain.requestStages.map { "\(type(of: $0))" }
        #expect(
            requestSide == [
                "ProtocolLookupStage", "LocalSchemeStage", "URLValidationStage", "HeaderDefaultsStage", "CookieStage",
                "CredentialStage", "CacheLookupStage",
            ])
        let responseSide = StageChain.responseStages.map { "\(type(of: $0))" }
        #expect(
            responseSide == [
                "CookieStorageStage", "CacheInvalidationStage", "AuthenticationStage", "RedirectStage",
                "CacheStorageStage", "DispositionStage",
            ])
    }

    /// A long `data:` URL is not decoded on the thread that called `resume()` (the request side's immediate stages
    /// run there): the chain waits, and the stage executor answers it. A short one is answered at once.
    @Test func aLongDataURLWaitsForTheStageExecutor() async throws {
        let long = "data:;base64," + Data(count: LocalSchemeStage.immediateDataURLLength).base64EncodedString()
        for (text, waits) in [("data:,short", false), (long, true)] {
            let request = URLRequest(url: try #require(URL(string: text)))
            let (result, immediately) = await outcome(
                of: StageChain.runRequestSide(request, stages: [LocalSchemeStage()], context: context()))
            #expect(immediately == !waits, "\(text.prefix(20))")
            guard case .success(.respond) = result else {
                Issue.record("\(text.prefix(20)): \(result)")
                continue
            }
        }
    }
}

private final class Log: Sendable {
    private let box = NIOLockedValueBox<[String]>([])
    var entries: [String] { box.withLockedValue { $0 } }
    func append(_ entry: String) { box.withLockedValue { $0.append(entry) } }
}

private func tagged(_ request: URLRequest, _ tag: String) -> URLRequest {
    var next = request
    let previous = request.value(forHTTPHeaderField: "X-Stages")
    next.setValue(previous.map { "\($0),\(tag)" } ?? tag, forHTTPHeaderField: "X-Stages")
    return next
}

private struct Tagging: RequestStage {
    let tag: String
    let log: Log
    init(_ tag: String, _ log: Log) {
        self.tag = tag
        self.log = log
    }

    func immediate(_ request: URLRequest, in context: StageContext) throws(TransferError) -> RequestStep? {
        log.append(tag)
        return .proceed(tagged(request, tag))
    }
}

private struct Waiting: RequestStage {
    let tag: String
    let log: Log
    init(_ tag: String, _ log: Log) {
        self.tag = tag
        self.log = log
    }

    func immediate(_ request: URLRequest, in context: StageContext) throws(TransferError) -> RequestStep? { nil }

    func process(_ request: URLRequest, in context: StageContext) async throws(TransferError) -> RequestStep {
        try? await Task.sleep(for: .milliseconds(5))
        log.append(tag)
        return .proceed(tagged(request, tag))
    }
}

private struct Answering: RequestStage {
    func immediate(_ request: URLRequest, in context: StageContext) throws(TransferError) -> RequestStep? {
        .respond(NetworkSource(request: try TransportRequestFixture.make(), transport: FakeTransport()))
    }
}

private struct Failing: RequestStage {
    func immediate(_ request: URLRequest, in context: StageContext) throws(TransferError) -> RequestStep? {
        throw .badURL("refused")
    }
}

private struct FollowingUp: ResponseStage {
    func immediate(_ response: URLResponse, in context: StageContext) throws(TransferError) -> ResponseStep? {
        .followUp(URLRequest(url: URL(string: "http://example.test/next")!), dropsBody: true)
    }
}

private struct ResponseTagging: ResponseStage {
    let tag: String
    let log: Log
    init(_ tag: String, _ log: Log) {
        self.tag = tag
        self.log = log
    }

    func immediate(_ response: URLResponse, in context: StageContext) throws(TransferError) -> ResponseStep? {
        log.append(tag)
        return .proceed(response)
    }
}
