import CourierHTTP
import CourierTransport
import Foundation

/// Redirects: the response side's first stage. The delegate may follow, change or refuse each hop; a followed
/// hop loops back through the request stages as a new attempt.
extension TaskRunner {
    func redirectPlan(for head: TransportResponseHead, request: URLRequest) -> RedirectPlan? {
        guard let url = request.url else { return nil }
        guard RedirectPolicy.isRedirectStatus(head.status) else { return nil }
        let location = head.headers.first { HeaderName.equal($0.0, "Location") }?.1
        return RedirectPolicy.plan(
            status: head.status,
            location: location,
            method: request.httpMethod ?? "GET",
            currentURL: url
        )
    }

    func handleRedirect(_ plan: RedirectPlan, response: HTTPURLResponse, request: URLRequest, generation: Int) {
        let tooMany: Bool = lock.withLock {
            state.redirectCount += 1
            return state.redirectCount > RedirectPolicy.maximumRedirects
        }
        if tooMany {
            // Darwin's wording; the limit (RedirectPolicy.maximumRedirects) is Darwin's too.
            fail(TransferError.httpTooManyRedirects("too many HTTP redirects"))
            return
        }
        let newRequest = Self.redirectedRequest(request, plan: plan)
        if plan.dropsBody {
            lock.withLock { state.bodyState.dropped = true }
        }
        logger.debug(
            "redirect",
            metadata: [
                "task": "\(task.taskIdentifier)", "status": "\(response.statusCode)",
                "location": "\(plan.url.absoluteString)",
            ]
        )
        guard let delegate = task.resolvedDelegate(URLSessionTaskDelegate.self) else {
            follow(newRequest)
            return
        }
        startHolding()
        let session = self.session
        let task = self.task
        session.dispatcher.async { [self] in
            let decided = CompletionOnce()
            delegate.urlSession(session, task: task, willPerformHTTPRedirection: response, newRequest: newRequest) {
                [self] chosen in
                guard decided.claim() else { return }
                guard isCurrent(generation) else { return }
                if let chosen {
                    follow(chosen)
                } else {
                    // The redirect response is the final one. Unless a response decision of its own now holds
                    // the events, let its body through.
                    if !deliverHead(response, generation: generation) {
                        releaseHeld()
                    }
                }
            }
        }
    }

    func follow(_ request: URLRequest) {
        let old: TransportExchange? = lock.withLock {
            state.generation += 1
            // The new attempt starts clean; only the app's own suspension carries over.
            state.pauseReasons.remove(.awaitingDecision)
            state.pauseReasons.remove(.backpressure)
            state.heldParts = []
            state.heldFinish = false
            state.body = Data()
            defer { state.exchange = nil }
            return state.exchange
        }
        old?.cancel()
        task.update { $0.countOfBytesReceived = 0 }
        send(request)
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
