import Foundation

/// What the response stages' first checks read about the task, gathered without making a ``StageContext``.
///
/// Most responses are met by no response stage (no cookie to store, not a redirect or a challenge, no cache, no
/// disposition to ask for): ``StageChain/responseSidePasses(_:_:)`` tells them apart from these facts, and the
/// engine then skips the chain, its context and its calls. On a sequential small request the chain's code was a
/// measurable part of the round trip, far more than its instructions, as it is code the request otherwise never
/// touches.
struct ResponseStageFacts {
    /// The session has a cookie storage to keep `Set-Cookie` fields in, and the response came from the network or
    /// a local source, not from the `URLCache` (whose stored `Set-Cookie` fields were stored when first received).
    var storesCookies: Bool
    /// A custom `URLProtocol` redirected the request (`wasRedirectedTo:`).
    var hasProtocolRedirect: Bool
    /// The response came from a custom `URLProtocol` (or a `data:`/`file:` URL), not from an HTTP exchange: its
    /// status is not acted on as a redirect (only `wasRedirectedTo:` redirects it, as on Darwin).
    var answeredLocally: Bool
    /// The task's authentication, when it met a challenge before.
    var authentication: AuthenticationState?
    /// The task caches: a ``CacheTransaction`` exists.
    var caches: Bool
    /// The app decides on each response.
    var asksForResponses: Bool

    /// The facts of a response from `origin` (`nil`: no source yet, the network's rules).
    init(
        hasCookieStorage: Bool, origin: TransactionRecord.Origin?, hasProtocolRedirect: Bool,
        authentication: AuthenticationState?, caches: Bool, asksForResponses: Bool
    ) {
        self.storesCookies = hasCookieStorage && origin != .cache
        self.hasProtocolRedirect = hasProtocolRedirect
        self.answeredLocally = origin == .local
        self.authentication = authentication
        self.caches = caches
        self.asksForResponses = asksForResponses
    }

    /// The facts of a context the chain already has.
    init(_ context: StageContext) {
        self.init(
            hasCookieStorage: context.settings.cookieStorage != nil,
            origin: context.responseOrigin,
            hasProtocolRedirect: context.protocolRedirect != nil,
            authentication: context.authentication,
            caches: context.cache != nil,
            asksForResponses: context.asksForResponses
        )
    }
}
