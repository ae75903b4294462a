import CourierHTTP
import Foundation

/// HTTP authentication (response side): a 401 asks for credentials, as on Darwin.
///
/// Each `WWW-Authenticate` challenge Courier can answer (Basic, for now) becomes a `URLAuthenticationChallenge` for
/// the delegate, in the order the server sent them, with the protection space (host, port, scheme, realm, method),
/// `previousFailureCount` (credentials this task already sent for the space), `proposedCredential` (the storage's
/// default for the space, or the URL's user and password, on the first try; the credential that failed after) and
/// the 401 as `failureResponse`. The answer:
/// - `.useCredential`: the request is sent again with it (the 401's body is drained, so the connection is reused);
///   a wrong one draws the next challenge, with `previousFailureCount` one higher.
/// - `.performDefaultHandling`: the proposed credential on the first try; else the 401 is the response.
/// - `.rejectProtectionSpace`: the next challenge; after the last, the 401 is the response.
/// - `.cancelAuthenticationChallenge`: the task fails with `URLError(.cancelled)`.
///
/// Without a delegate, default handling. A credential that worked (the response to it is not a 401 for its space)
/// is stored in the session's `urlCredentialStorage` unless its persistence is `.none`. The delegate and a custom
/// storage are user code, so the stage waits (``process(_:in:)``) whenever it has to ask or store.
struct AuthenticationStage: ResponseStage {
    func immediate(_ response: URLResponse, in context: StageContext) throws(TransferError) -> ResponseStep? {
        guard let http = response as? HTTPURLResponse else { return .proceed(response) }
        if http.statusCode == 401, context.authentication != nil, !Self.answerableChallenges(in: http).isEmpty {
            return nil
        }
        return context.authentication?.hasCredentialInFlight == true ? nil : .proceed(response)
    }

    func process(_ response: URLResponse, in context: StageContext) async throws(TransferError) -> ResponseStep {
        guard let http = response as? HTTPURLResponse, let url = http.url ?? context.currentRequest.url,
            let state = context.authentication
        else { return .proceed(response) }
        let sent = state.takeCredentialInFlight()
        guard http.statusCode == 401 else {
            if let sent { store(sent.credential, for: sent.space, in: context) }
            return .proceed(response)
        }
        for challenge in Self.answerableChallenges(in: http) {
            let space = Self.space(for: challenge, url: url)
            let failures = state.failures(for: space)
            let proposed: URLCredential?
            if failures == 0 {
                proposed =
                    context.configuration.urlCredentialStorage?.defaultCredential(for: space.protectionSpace)
                    ?? Self.userInfoCredential(of: url)
            } else {
                proposed = state.lastCredential(for: space)
            }
            let question = AuthenticationQuestion(
                space: space, previousFailureCount: failures,
                proposedCredential: AuthenticationQuestion.Credential(proposed), failureResponse: CodableResponse(http))
            guard case .authenticate(let disposition, let answered)? = await context.decide(.authenticate(question))
            else { return .proceed(response) }  // the task ended meanwhile
            let credential: URLCredential?
            switch disposition {
            case .useCredential:
                credential = answered?.urlCredential
            case .performDefaultHandling:
                credential = failures == 0 ? proposed : nil
            case .cancelAuthenticationChallenge:
                throw .cancelled("the app cancelled the authentication challenge of \(space.host)")
            case .rejectProtectionSpace:
                continue
            }
            guard let credential, let user = credential.user, let password = credential.password,
                let value = BasicAuthentication.authorizationValue(user: user, password: password)
            else { return .proceed(response) }
            state.sending(credential, for: space)
            var next = context.currentRequest
            next.setValue(value, forHTTPHeaderField: "Authorization")
            return .followUp(next, dropsBody: false)
        }
        return .proceed(response)
    }

    /// The challenges of the response that Courier can answer, in order.
    static func answerableChallenges(in response: HTTPURLResponse) -> [AuthenticationChallenge] {
        // Repeated fields are joined with commas, which is how challenges are separated anyway.
        guard let field = response.headerFields["WWW-Authenticate"] else { return [] }
        return AuthenticationChallengeParser.parse([field]).filter { $0.isScheme("Basic") }
    }

    static func space(for challenge: AuthenticationChallenge, url: URL) -> AuthenticationQuestion.Space {
        let scheme = url.scheme?.lowercased() ?? "http"
        return AuthenticationQuestion.Space(
            host: url.host ?? "", port: url.port ?? (scheme == "https" ? 443 : 80), protocol: scheme,
            realm: challenge.realm, authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
    }

    /// `http://user:password@host/`: a credential for this task only.
    static func userInfoCredential(of url: URL) -> URLCredential? {
        guard let user = url.user?.removingPercentEncoding, let password = url.password?.removingPercentEncoding
        else { return nil }
        return URLCredential(user: user, password: password, persistence: .forSession)
    }

    private func store(_ credential: URLCredential, for space: AuthenticationQuestion.Space, in context: StageContext) {
        guard credential.persistence != .none, let storage = context.configuration.urlCredentialStorage else { return }
        storage.set(credential, for: space.protectionSpace)
        if let url = context.currentRequest.url { context.authenticatedSpaces?.remember(space, for: url) }
    }
}
