import Courier
import Foundation
import Testing

/// Records how a challenge was answered.
private final class RecordingSender: NSObject, URLAuthenticationChallengeSender, @unchecked Sendable {
    private(set) var answers: [String] = []

    func use(_ credential: URLCredential, for challenge: URLAuthenticationChallenge) {
        answers.append("use \(credential.user ?? "")")
    }

    func continueWithoutCredential(for challenge: URLAuthenticationChallenge) {
        answers.append("continue")
    }

    func cancel(_ challenge: URLAuthenticationChallenge) {
        answers.append("cancel")
    }
}

@Suite("URLAuthenticationChallenge")
struct URLAuthenticationChallengeTests {
    private let space = URLProtectionSpace(
        host: "example.com", port: 443, protocol: NSURLProtectionSpaceHTTPS, realm: "r",
        authenticationMethod: NSURLAuthenticationMethodHTTPBasic)

    @Test("Properties are kept and copies take a new sender")
    func properties() throws {
        let sender = RecordingSender()
        let proposed = URLCredential(user: "u", password: "p", persistence: .forSession)
        let url = try #require(URL(string: "https://example.com"))
        let response = try #require(
            HTTPURLResponse(url: url, statusCode: 401, httpVersion: nil, headerFields: nil))
        let challenge = URLAuthenticationChallenge(
            protectionSpace: space, proposedCredential: proposed, previousFailureCount: 2, failureResponse: response,
            error: URLError(.userAuthenticationRequired), sender: sender)
        #expect(challenge.protectionSpace == space)
        #expect(challenge.proposedCredential == proposed)
        #expect(challenge.previousFailureCount == 2)
        #expect(challenge.failureResponse === response)
        #expect((challenge.error as? URLError)?.code == .userAuthenticationRequired)
        #expect(challenge.sender === sender)

        let otherSender = RecordingSender()
        let copy = URLAuthenticationChallenge(authenticationChallenge: challenge, sender: otherSender)
        #expect(copy.sender === otherSender)
        #expect(copy.previousFailureCount == 2)
        #expect(copy.protectionSpace == space)
    }

    @Test("Optional sender methods default to cancelling")
    func defaultSenderMethods() {
        let sender = RecordingSender()
        let challenge = URLAuthenticationChallenge(
            protectionSpace: space, proposedCredential: nil, previousFailureCount: 0, failureResponse: nil, error: nil,
            sender: sender)
        challenge.sender?.use(URLCredential(user: "me", password: "pw", persistence: .none), for: challenge)
        challenge.sender?.performDefaultHandling(for: challenge)
        challenge.sender?.rejectProtectionSpaceAndContinue(with: challenge)
        #expect(sender.answers == ["use me", "cancel", "cancel"])
    }
}
