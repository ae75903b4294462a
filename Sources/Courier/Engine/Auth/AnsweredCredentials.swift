import Foundation

/// The credential fields (`Authorization`, `Proxy-Authorization`) the engine wrote into its request to answer
/// challenges. They are the session's to send, not part of the request the app made: `currentRequest` and resume
/// data show the request without them (with the app's own value of the field, if it set one), as Darwin, which
/// applies credentials below the request its task exposes, and FoundationNetworking (which hands them to libcurl)
/// do. Otherwise a password given with persistence `.none` could be read back from the task, and would be written
/// with the resume data an app keeps on disk.
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
}
