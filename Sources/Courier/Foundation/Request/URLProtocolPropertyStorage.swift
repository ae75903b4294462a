import Foundation

/// The properties a `URLProtocol` attached to a `URLRequest` with `URLProtocol.setProperty(_:forKey:in:)`.
///
/// Values are `Any`, as in Apple's API, so the storage is `@unchecked Sendable`: like Apple, Courier expects
/// property-list values (strings, numbers, data, dates, arrays and dictionaries of them), which are safe to share;
/// a mutable reference stored here is shared by every copy of the request.
///
/// Equality and hashing ignore the properties: two requests that differ only in their protocol properties are
/// equal and hash alike. `Any` values cannot be compared in general, and the properties are bookkeeping of
/// protocol implementations (such as a "handled" marker), not part of what is requested.
struct URLProtocolPropertyStorage: Hashable, @unchecked Sendable {
    /// The properties by key.
    var values: [String: Any] = [:]

    static func == (lhs: Self, rhs: Self) -> Bool {
        true
    }

    func hash(into hasher: inout Hasher) {}
}
