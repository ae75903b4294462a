import Foundation

/// The task variants Apple declares in an extension of `URLCredentialStorage`. Courier keeps one set of credentials
/// per storage, so the task does not change the outcome: each method does what its counterpart without a task does.
///
/// Apple's are `open` (Objective-C methods); these are `public`, because Swift cannot override a method declared
/// in an extension. Override the methods without a task instead, which these call. Completion handlers are called
/// before the method returns, on the calling thread.
extension URLCredentialStorage {
    /// Passes the credentials stored for a protection space, keyed by user name, or `nil`, to a completion handler.
    ///
    /// - Parameters:
    ///   - protectionSpace: The protection space.
    ///   - task: The task the credentials are for.
    ///   - completionHandler: Receives the credentials.
    public func getCredentials(
        for protectionSpace: URLProtectionSpace, task: URLSessionTask,
        completionHandler: @escaping @Sendable ([String: URLCredential]?) -> Void
    ) {
        completionHandler(credentials(for: protectionSpace))
    }

    /// Returns the credentials stored for a protection space, keyed by user name, or `nil`.
    ///
    /// - Parameters:
    ///   - protectionSpace: The protection space.
    ///   - task: The task the credentials are for.
    public func credentials(
        for protectionSpace: URLProtectionSpace, task: URLSessionTask
    ) async -> [String: URLCredential]? {
        credentials(for: protectionSpace)
    }

    /// Stores a credential for a protection space, as ``set(_:for:)`` does.
    ///
    /// - Parameters:
    ///   - credential: The credential to store.
    ///   - protectionSpace: The protection space it applies to.
    ///   - task: The task the credential is for.
    public func set(_ credential: URLCredential, for protectionSpace: URLProtectionSpace, task: URLSessionTask) {
        set(credential, for: protectionSpace)
    }

    /// Removes a credential from a protection space, as ``remove(_:for:options:)`` does.
    ///
    /// - Parameters:
    ///   - credential: The credential to remove; it is matched by user name.
    ///   - protectionSpace: The protection space it applies to.
    ///   - options: Removal options (ignored, see ``remove(_:for:options:)``).
    ///   - task: The task the credential is for.
    public func remove(
        _ credential: URLCredential, for protectionSpace: URLProtectionSpace, options: [String: Any]? = nil,
        task: URLSessionTask
    ) {
        remove(credential, for: protectionSpace, options: options)
    }

    /// Passes the default credential of a protection space, or `nil`, to a completion handler.
    ///
    /// - Parameters:
    ///   - space: The protection space.
    ///   - task: The task the credential is for.
    ///   - completionHandler: Receives the default credential.
    public func getDefaultCredential(
        for space: URLProtectionSpace, task: URLSessionTask,
        completionHandler: @escaping @Sendable (URLCredential?) -> Void
    ) {
        completionHandler(defaultCredential(for: space))
    }

    /// Returns the default credential of a protection space, or `nil`.
    ///
    /// - Parameters:
    ///   - space: The protection space.
    ///   - task: The task the credential is for.
    public func defaultCredential(for space: URLProtectionSpace, task: URLSessionTask) async -> URLCredential? {
        defaultCredential(for: space)
    }

    /// Stores a credential and makes it the default of a protection space, as ``setDefaultCredential(_:for:)``
    /// does.
    ///
    /// - Parameters:
    ///   - credential: The credential.
    ///   - protectionSpace: The protection space.
    ///   - task: The task the credential is for.
    public func setDefaultCredential(
        _ credential: URLCredential, for protectionSpace: URLProtectionSpace, task: URLSessionTask
    ) {
        setDefaultCredential(credential, for: protectionSpace)
    }
}
