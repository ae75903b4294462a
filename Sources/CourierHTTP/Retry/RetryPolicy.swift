import Foundation

/// Whether a failed background transfer is tried again, and when: Darwin's background sessions retry what the
/// network took away (the connection lost, no network, the host unreachable, a request timeout) and a server's
/// `503`/`5xx` with `Retry-After`, until the task's resource timeout; everything else ends the task.
package struct RetryPolicy: Sendable {
    package var base: TimeInterval
    package var maximum: TimeInterval

    package init(base: TimeInterval, maximum: TimeInterval) {
        self.base = base
        self.maximum = maximum
    }

    /// Failures that say nothing about the request itself: the same request may well succeed later.
    package static let transientCodes: Set<URLError.Code> = [
        .networkConnectionLost, .notConnectedToInternet, .cannotConnectToHost, .cannotFindHost, .dnsLookupFailed,
        .timedOut, .internationalRoamingOff, .dataNotAllowed, .callIsActive,
    ]

    /// The delay before the next attempt after `error`, or `nil` when the task ends. `failuresWithoutProgress`
    /// counts the failures in a row that received no new byte (the delay doubles with each); `deadline` is the end
    /// of the resource timeout.
    package func delay(
        after error: URLError, failuresWithoutProgress: Int, now: Date, deadline: Date
    ) -> TimeInterval? {
        guard Self.transientCodes.contains(error.code) else { return nil }
        return bounded(backoff(failuresWithoutProgress), now: now, deadline: deadline)
    }

    /// The delay before retrying a server error response, or `nil` when the response is the task's result: only a
    /// `5xx` with a `Retry-After` the server set (seconds, or an HTTP date) is retried.
    package func delay(status: Int, retryAfter: String?, now: Date, deadline: Date) -> TimeInterval? {
        guard (500...599).contains(status), let retryAfter = retryAfter?.trimmingCharacters(in: .whitespaces) else {
            return nil
        }
        let requested: TimeInterval
        if let seconds = Int(retryAfter), seconds >= 0 {
            requested = TimeInterval(seconds)
        } else if let date = CookieDate.parse(retryAfter) {
            requested = max(0, date.timeIntervalSince(now))
        } else {
            return nil
        }
        return bounded(min(requested, 24 * 3600), now: now, deadline: deadline)
    }

    private func backoff(_ failures: Int) -> TimeInterval {
        min(maximum, base * pow(2, Double(min(failures, 30))))
    }

    private func bounded(_ delay: TimeInterval, now: Date, deadline: Date) -> TimeInterval? {
        now.addingTimeInterval(delay) < deadline ? delay : nil
    }
}
