import CourierHTTP
import Foundation

/// Redirects: the response side's first decision (after cookie storage, and after the authentication stage, which
/// only settles a credential a 3xx answered). A 3xx with a usable `Location` becomes a follow-up request
/// (method and body rewritten, credentials and cookies of another origin removed, by ``RedirectPolicy``); the
/// app's delegate, when there is one, may follow it, change it, or refuse it (the redirect response is then
/// delivered as the final one).
///
/// A custom `URLProtocol` redirects only with `wasRedirectedTo:redirectResponse:`: a 3xx it hands over with
/// `didReceive(_:cacheStoragePolicy:)` is its final response, as on Darwin (where redirects are followed by the
/// HTTP loader, not by the client of a custom protocol; stub libraries call `wasRedirectedTo:` for that reason).
struct RedirectStage: ResponseStage {
    /// Neither a protocol's redirect nor a redirect status of an HTTP exchange.
    static func passes(_ response: URLResponse, _ facts: ResponseStageFacts) -> Bool {
        guard !facts.hasProtocolRedirect else { return false }
        guard !facts.answeredLocally, let http = response as? HTTPURLResponse else { return true }
        return !RedirectPolicy.isRedirectStatus(http.statusCode)
    }

    func immediate(_ response: URLResponse, in context: StageContext) throws(TransferError) -> ResponseStep? {
        if Self.passes(response, ResponseStageFacts(context)) { return .proceed(response) }
        if let redirected = context.protocolRedirect {
            if context.redirectCount + 1 > RedirectPolicy.maximumRedirects {
                throw .httpTooManyRedirects("too many HTTP redirects")
            }
            // A protocol's redirect is asked about when the response is HTTP (the delegate method takes one).
            guard context.asksForRedirects, response is HTTPURLResponse else {
                return .followUp(redirected, dropsBody: false)
            }
            return nil
        }
        guard let plan = plan(for: response, in: context) else { return .proceed(response) }
        if context.redirectCount + 1 > RedirectPolicy.maximumRedirects {
            // Darwin's wording; the limit (RedirectPolicy.maximumRedirects) is Darwin's too.
            throw .httpTooManyRedirects("too many HTTP redirects")
        }
        guard context.asksForRedirects else {
            return .followUp(Self.redirectedRequest(context.currentRequest, plan: plan), dropsBody: plan.dropsBody)
        }
        return nil
    }

    func process(_ response: URLResponse, in context: StageContext) async throws(TransferError) -> ResponseStep {
        let proposed: URLRequest
        let dropsBody: Bool
        guard let http = response as? HTTPURLResponse else { return .proceed(response) }
        if let redirected = context.protocolRedirect {
            proposed = redirected
            dropsBody = false
        } else {
            guard let plan = plan(for: response, in: context) else { return .proceed(response) }
            proposed = Self.redirectedRequest(context.currentRequest, plan: plan)
            dropsBody = plan.dropsBody
        }
        // The delegate sees the request without the credentials the engine answered challenges with (as
        // `currentRequest` does); what it hands back gets them again where it left them alone.
        let answered = context.answeredCredentials
        switch await context.decide(.redirect(http, newRequest: answered?.visible(proposed) ?? proposed)) {
        case .redirect(let chosen?):
            return .followUp(answered?.restored(chosen, proposed: proposed) ?? chosen, dropsBody: dropsBody)
        case .redirect(nil):
            return .proceed(response)
        default:
            throw .cancelled()
        }
    }

    private func plan(for response: URLResponse, in context: StageContext) -> RedirectPlan? {
        guard let http = response as? HTTPURLResponse, RedirectPolicy.isRedirectStatus(http.statusCode),
            let url = context.currentRequest.url
        else { return nil }
        return RedirectPolicy.plan(
            status: http.statusCode,
            location: http.value(forHTTPHeaderField: "Location"),
            method: context.currentRequest.httpMethod ?? "GET",
            currentURL: url
        )
    }

    static func redirectedRequest(_ request: URLRequest, plan: RedirectPlan) -> URLRequest {
        var next = request
        next.url = plan.url
        next.httpMethod = plan.method
        if plan.dropsBody {
            next.httpBody = nil
            next.httpBodyStream = nil
        }
        for name in plan.removedHeaderNames {
            next.setValue(nil, forHTTPHeaderField: name)
        }
        return next
    }
}
