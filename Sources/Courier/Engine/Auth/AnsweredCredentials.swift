import CourierHTTP
import Foundation

/// The credential fields (`Authorization`, `Proxy-Authorization`) the engine wrote into its request to answer
/// challenges. They are the session's to send, not part of the request the app made: `currentRequest` and resume
/// data show the request without them (with the app's own value of the field, if it set one), as Darwin, which
/// applies credentials below the request its task exposes, and FoundationNetworking (which hands them to libcurl)
/// do. Otherwise a password given with persistence `.none` could be read back from the task, and would be written
/// with the resume data an app keeps on disk. The same holds for the request `willPerformHTTPRedirection` proposes
/// and each transaction's request in the task's metrics.
struct AnsweredCredentials: Sendable {
    static let fieldNames = ["Authorization", "Proxy-Authorization"]

    /// Per field the engine wrote: the app's value before the first answer (`nil` inside: the app set none).
    private var original: [String: String?] = [:]
    /// Every value the engine wrote.
    private var written: Set<String> = []

    init() {}

    /// Records the fields an authentication retry `retry` changed from `request`.
    mutating func record(from request: URLRequest, to retry: URLRequest) {
        for name in Self.fieldNames {
            guard let value = retry.value(forHTTPHeaderField: name), value != request.value(forHTTPHeaderField: name)
            else { continue }
            if !original.keys.contains(name) {
                // `updateValue`: assigning a nil value through the subscript would remove the key instead.
                original.updateValue(request.value(forHTTPHeaderField: name), forKey: name)
            }
            written.insert(value)
        }
    }

    /// `request` as the app sees it: a field holding a value the engine wrote gets the app's own value back, or is
    /// removed. (A field a redirect to another origin removed stays removed.)
    func visible(_ request: URLRequest) -> URLRequest {
        var visible = request
        for name in Self.fieldNames {
            guard let value = request.value(forHTTPHeaderField: name), written.contains(value) else { continue }
            visible.setValue(original[name] ?? nil, forHTTPHeaderField: name)
        }
        return visible
    }

    /// The request to send for a redirect the app answered with `chosen`, when it was shown `visible(proposed)`:
    /// a credential field the app left as it was shown gets the engine's value back, as on Darwin, where the
    /// credential is applied below the request the delegate sees. Only on the proposed request's origin: a
    /// credential never follows the app's request to another one (as ``RedirectPolicy`` removes it then).
    func restored(_ chosen: URLRequest, proposed: URLRequest) -> URLRequest {
        guard let from = proposed.url, let to = chosen.url, RedirectPolicy.isSameOrigin(from, to) else { return chosen }
        let shown = visible(proposed)
        var restored = chosen
        for name in Self.fieldNames {
            guard let value = proposed.value(forHTTPHeaderField: name), written.contains(value),
                chosen.value(forHTTPHeaderField: name) == shown.value(forHTTPHeaderField: name)
            else { continue }
            restored.setValue(value, forHTTPHeaderField: name)
        }
        return restored
    }
}
