import CourierHTTP
import CourierTransport
import Foundation

/// HTTP authentication (response side): a 401 asks for credentials, as on Darwin, and a 407 for proxy credentials.
///
/// A 407's `Proxy-Authenticate` challenges go through the same steps with a proxy protection space (`isProxy()`
/// true; its host and port are the proxy's that the session sends the URL through, else the server that answered)
/// and are answered with `Proxy-Authorization`.
///
/// Each `WWW-Authenticate` challenge (Digest with SHA-256 or MD5, then Basic: the strongest first, else in the
/// server's order; then schemes Courier does not know, as `NSURLAuthenticationMethodDefault`, which the app may see
/// and cancel but no credential answers) becomes a `URLAuthenticationChallenge` for the delegate, with the protection space (host, port, scheme, realm, method),
/// `previousFailureCount` (credentials this task already sent for the space), `proposedCredential` (the storage's
/// default for the space, or the URL's user and password, on the first try; the credential that failed after) and
/// the 401 as `failureResponse`. The answer:
/// - `.useCredential`: the request is sent again with it (the 401's body is drained, so the connection is reused);
///   a wrong one draws the next challenge, with `previousFailureCount` one higher.
/// - `.performDefaultHandling`: the proposed credential on the first try; else the 401 is the response.
/// - `.rejectProtectionSpace`: the next challenge; after the last, the 401 is the response.
/// - `.cancelAuthenticationChallenge`: the task fails with `URLError(.cancelled)`.
///
/// A Digest challenge with `stale=true` (the server renewed its nonce) is answered again with the credential last
/// sent for its space, without asking. Without a delegate, default handling. After ``maximumFailures`` credentials
/// failed for one space, its challenge is no longer asked about and the 401 is delivered (a delegate that always
/// answers the same wrong credential would otherwise loop until the resource timeout). A retry with credentials is
/// not a redirect: it does not count against the redirect limit. A credential that worked (the response to it is not
/// a 401) is stored in the session's `urlCredentialStorage` unless its persistence is `.none`. The delegate and a
/// custom storage are user code, so the stage waits (``process(_:in:)``) whenever it has to ask or store.
struct AuthenticationStage: ResponseStage {
    /// Not a challenge the task can answer, and no credential sent with this attempt waits for its outcome.
    static func passes(_ response: URLResponse, _ facts: ResponseStageFacts) -> Bool {
        guard let http = response as? HTTPURLResponse, let authentication = facts.authentication else { return true }
        return !isChallenge(http) && !authentication.hasCredentialInFlight
    }

    func immediate(_ response: URLResponse, in context: StageContext) throws(TransferError) -> ResponseStep? {
        guard !Self.passes(response, ResponseStageFacts(context)), let http = response as? HTTPURLResponse else {
            return .proceed(response)
        }
        if Self.isChallenge(http), context.authentication != nil, !Self.answerableChallenges(in: http).isEmpty {
            return nil
        }
        return context.authentication?.hasCredentialInFlight == true ? nil : .proceed(response)
    }

    func process(_ response: URLResponse, in context: StageContext) async throws(TransferError) -> ResponseStep {
        guard let http = response as? HTTPURLResponse, let url = http.url ?? context.currentRequest.url,
            let state = context.authentication
        else { return .proceed(response) }
        let sent = state.takeCredentialInFlight()
        guard Self.isChallenge(http) else {
            // Also a redirect (this stage runs before the redirect stage): the credential got the request through,
            // and a challenge for its space after the redirect (which takes the credential off a request to another
            // origin) is a first one, not its failure.
            if let sent { worked(sent, state: state, in: context) }
            return .proceed(response)
        }
        let isProxy = http.statusCode == 407
        // A credential sent for the other kind of space worked: a proxy let the request through to a server that
        // asks in turn (or the other way round).
        if let sent, (sent.space.proxyType != nil) != isProxy {
            worked(sent, state: state, in: context)
        }
        // What a proxy's Digest answer covers: the CONNECT of a tunnel, not the request inside it.
        let digestTarget =
            isProxy
            ? Self.proxyDigestTarget(
                for: context.currentRequest, rules: context.settings.proxyRules,
                isWebSocket: context.task is URLSessionWebSocketTask) : nil
        for challenge in Self.answerableChallenges(in: http) {
            // A proxy's space names the proxy (when the session has one for the URL), not the origin.
            let spaceURL = isProxy ? Self.proxyURL(for: url, rules: context.settings.proxyRules) ?? url : url
            let space = Self.space(for: challenge, url: spaceURL, isProxy: isProxy)
            // A server that calls every nonce stale gets a bounded number of silent retries, then the delegate again.
            if let digest = DigestAuthentication(challenge), digest.isStale,
                state.staleResends(for: space) < Self.maximumFailures,
                let previous = state.lastCredential(for: space),
                let next = Self.authorize(
                    context.currentRequest, challenge: challenge, credential: previous, state: state,
                    isProxy: isProxy, uploadBody: context.uploadBody, digestTarget: digestTarget)
            {
                state.resending(previous, for: space, to: context.currentRequest.url)
                return .retry(next)
            }
            var failures = state.failures(for: space)
            // A stored credential the session sent ahead with this request (CredentialStage) drew the challenge: it
            // failed already, so it is not proposed, or sent again by default handling, as if it were untried.
            if failures == 0, !isProxy, challenge.isScheme("Basic"),
                let refused = Self.credentialSentAhead(
                    context.sentAuthorization, for: space, storage: context.configuration.urlCredentialStorage)
            {
                state.refusedAhead(refused, for: space)
                failures = 1
            }
            // A delegate that answers with the same wrong credential forever must not loop forever.
            guard failures < Self.maximumFailures else { continue }
            let proposed: URLCredential?
            if failures == 0 {
                // The URL's user and password are the origin's: never proposed to a proxy, which would get them
                // (as Basic, in the clear) when the delegate, or the lack of one, takes the default handling. For the
                // origin they come before the space's default, which may be another user's.
                proposed =
                    (isProxy ? nil : Self.userInfoCredential(of: url))
                    ?? context.configuration.urlCredentialStorage?.defaultCredential(for: space.protectionSpace)
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
            guard let credential,
                let next = Self.authorize(
                    context.currentRequest, challenge: challenge, credential: credential, state: state,
                    isProxy: isProxy, uploadBody: context.uploadBody, digestTarget: digestTarget)
            else { return .proceed(response) }
            state.sending(credential, for: space, to: context.currentRequest.url)
            return .retry(next)
        }
        return .proceed(response)
    }

    /// Credentials sent for one space before its challenges are no longer asked about (the 401 is then delivered).
    static let maximumFailures = 10

    /// A 401 (the server asks) or a 407 (a proxy asks).
    static func isChallenge(_ response: HTTPURLResponse) -> Bool {
        response.statusCode == 401 || response.statusCode == 407
    }

    /// The challenges of the response that Courier can answer, in order: a 401's `WWW-Authenticate`, a 407's
    /// `Proxy-Authenticate`.
    static func answerableChallenges(in response: HTTPURLResponse) -> [AuthenticationChallenge] {
        // Repeated fields are joined with commas, which is how challenges are separated anyway.
        let name = response.statusCode == 407 ? "Proxy-Authenticate" : "WWW-Authenticate"
        guard let field = response.headerFields[name] else { return [] }
        // A Digest challenge Courier cannot compute (an unknown algorithm) is left out; a scheme Courier does not
        // know is asked about with NSURLAuthenticationMethodDefault, last, as on Darwin.
        let answerable = AuthenticationChallengeParser.parse([field]).filter {
            !$0.isScheme("Digest") || DigestAuthentication($0) != nil
        }
        // The strongest first (a stable sort keeps the server's order among equals).
        return answerable.enumerated().sorted { lhs, rhs in
            let left = strength(lhs.element)
            let right = strength(rhs.element)
            return left == right ? lhs.offset < rhs.offset : left > right
        }.map(\.element)
    }

    private static func strength(_ challenge: AuthenticationChallenge) -> Int {
        guard let digest = DigestAuthentication(challenge) else { return challenge.isScheme("Basic") ? 0 : -1 }
        switch digest.algorithm {
        case .sha256, .sha256Session: return 2
        case .md5, .md5Session: return 1
        }
    }

    /// `http://proxy:port` for the proxy `url` goes through, with the scheme of `url` (the protection space's proxy
    /// type follows it: an `https` request's proxy is an HTTPS proxy space).
    static func proxyURL(for url: URL, rules: ProxyRules) -> URL? {
        guard let proxy = rules.proxy(for: url), let scheme = url.scheme?.lowercased() else { return nil }
        return URL(string: "\(scheme)://\(proxy.authority)")
    }

    /// The method and request-target a proxy's Digest answer is computed over (RFC 7616 §3.4.1: A2 is the method and
    /// request-target of the message that carries the answer): for a request that goes through an HTTP proxy's
    /// `CONNECT` tunnel (`https`, and a WebSocket handshake, which the engine runs on an `http` URL and tunnels as
    /// ``TransportRequestBuilder`` does), the `CONNECT` and the authority its line carries (``Endpoint/authority``,
    /// what `TunnelConnectHandler` writes); `nil` otherwise (the request itself carries the answer).
    static func proxyDigestTarget(
        for request: URLRequest, rules: ProxyRules, isWebSocket: Bool = false
    ) -> (method: String, uri: String)? {
        guard let url = request.url, rules.proxy(for: url)?.kind == .http, let endpoint = try? Endpoint(url: url),
            endpoint.scheme == .https || isWebSocket
        else { return nil }
        return ("CONNECT", endpoint.authority)
    }

    /// The protection space `challenge` asks about for `url` (the proxy's URL for a proxy's challenge).
    ///
    /// A Basic challenge without the `realm` RFC 7617 requires (`WWW-Authenticate: Basic`, which servers send) is in
    /// the realm named by the host, as on Darwin: a credential stored for that space answers it (Alamofire's suite
    /// stores its credential for such a server with `realm:` its host, and passes on Darwin).
    static func space(
        for challenge: AuthenticationChallenge, url: URL, isProxy: Bool = false
    ) -> AuthenticationQuestion.Space {
        let scheme = url.scheme?.lowercased() ?? "http"
        let isBasic = challenge.isScheme("Basic")
        let method =
            challenge.isScheme("Digest")
            ? NSURLAuthenticationMethodHTTPDigest
            : isBasic ? NSURLAuthenticationMethodHTTPBasic : NSURLAuthenticationMethodDefault
        let proxyType = scheme == "https" ? NSURLProtectionSpaceHTTPSProxy : NSURLProtectionSpaceHTTPProxy
        let host = url.host ?? ""
        return AuthenticationQuestion.Space(
            host: host, port: url.port ?? (scheme == "https" ? 443 : 80), protocol: scheme,
            realm: challenge.realm ?? (isBasic ? host : nil), authenticationMethod: method,
            proxyType: isProxy ? proxyType : nil)
    }

    /// `request` with the `Authorization` (for a proxy's challenge, `Proxy-Authorization`) that answers `challenge`
    /// with `credential`; `nil` when it cannot be made (no password, a user name Basic cannot carry, an `auth-int`
    /// Digest for a body that is not in memory). A Digest answer covers `digestTarget` when given (a tunnel's
    /// `CONNECT`, which has no body), else the request's method and target.
    static func authorize(
        _ request: URLRequest, challenge: AuthenticationChallenge, credential: URLCredential,
        state: AuthenticationState, isProxy: Bool = false, uploadBody: UploadBody? = nil,
        digestTarget: (method: String, uri: String)? = nil
    ) -> URLRequest? {
        guard let user = credential.user, let password = credential.password, let url = request.url else { return nil }
        let value: String
        if let digest = DigestAuthentication(challenge) {
            var bodyHash: String? = nil
            if digest.protection == .authInt, digestTarget == nil {
                guard let hash = Self.bodyHash(of: request, upload: uploadBody, algorithm: digest.algorithm) else {
                    return nil
                }
                bodyHash = hash
            }
            value = digest.authorizationValue(
                user: user, password: password, method: digestTarget?.method ?? request.httpMethod ?? "GET",
                uri: digestTarget?.uri ?? Endpoint.requestTarget(of: url),
                nonceCount: state.nextNonceCount(for: digest.nonce),
                clientNonce: DigestAuthentication.makeClientNonce(), bodyHash: bodyHash)
        } else {
            // A scheme Courier does not know cannot be answered: the password is not sent as Basic instead.
            guard challenge.isScheme("Basic"),
                let basic = BasicAuthentication.authorizationValue(user: user, password: password)
            else { return nil }
            value = basic
        }
        var authorized = request
        authorized.setValue(value, forHTTPHeaderField: isProxy ? "Proxy-Authorization" : "Authorization")
        return authorized
    }

    /// The hash `auth-int` covers: an upload task's data or file (read in pieces, off the event loops, as stages
    /// run), else the request's body; `nil` for a stream, which cannot be read twice, or a file that cannot be read.
    static func bodyHash(
        of request: URLRequest, upload: UploadBody?, algorithm: DigestAuthentication.Algorithm
    ) -> String? {
        switch upload {
        case .data(let data): return algorithm.hash(Array(data))
        case .file(let file): return try? algorithm.hash(contentsOf: file)
        case .streamed: return nil
        case nil:
            // Bytes first: a request a protocol forwards may offer its bytes as a stream too.
            if let body = request.httpBody { return algorithm.hash(Array(body)) }
            if request.httpBodyStream != nil { return nil }
            return algorithm.hash([])
        }
    }

    /// The credential stored for `space` whose Basic answer is `sent`, the `Authorization` field the request went
    /// out with (the one ``CredentialStage`` sent ahead, or the app's own field with the same user and password).
    static func credentialSentAhead(
        _ sent: String?, for space: AuthenticationQuestion.Space, storage: URLCredentialStorage?
    ) -> URLCredential? {
        guard let sent, let stored = storage?.credentials(for: space.protectionSpace)
        else { return nil }
        return stored.values.first { credential in
            guard let user = credential.user, let password = credential.password else { return false }
            return BasicAuthentication.authorizationValue(user: user, password: password) == sent
        }
    }

    /// `http://user:password@host/`: a credential for this task only, each part percent-decoded once. `URL.user` is
    /// already decoded (`URL.password` is not): decoding it again turned `a%2541` into `aA` and made `a%25b` (`a%b`)
    /// no credential at all.
    static func userInfoCredential(of url: URL) -> URLCredential? {
        guard let user = url.user(percentEncoded: false), let password = url.password(percentEncoded: false)
        else { return nil }
        return URLCredential(user: user, password: password, persistence: .forSession)
    }

    /// A credential sent with the attempt worked: it is stored, and the task's failures in its space start again.
    private func worked(
        _ sent: (space: AuthenticationQuestion.Space, credential: URLCredential, url: URL?), state: AuthenticationState,
        in context: StageContext
    ) {
        state.worked(for: sent.space)
        store(sent.credential, for: sent.space, sentTo: sent.url, in: context)
    }

    /// Stores a credential that worked. `url` is where it was sent: the response that shows it worked may be a
    /// redirect to elsewhere, and the space is remembered for the URL that was authenticated, never for the
    /// redirect's target — or later requests to that other origin would carry this space's password.
    private func store(
        _ credential: URLCredential, for space: AuthenticationQuestion.Space, sentTo url: URL?, in context: StageContext
    ) {
        guard credential.persistence != .none, let storage = context.configuration.urlCredentialStorage else { return }
        storage.set(credential, for: space.protectionSpace)
        // Only Basic credentials are sent ahead, as on Darwin: sending a Digest space's password as Basic would give
        // away what Digest keeps secret. Proxy credentials are not sent ahead (a new tunnel draws the 407 again).
        if space.proxyType == nil, space.authenticationMethod == NSURLAuthenticationMethodHTTPBasic, let url {
            context.authenticatedSpaces?.remember(space, user: credential.user, for: url)
        }
    }
}
