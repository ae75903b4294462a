import Foundation

extension NSNotification.Name {
    /// Posted on `NotificationCenter.default` when the cookies of an ``HTTPCookieStorage`` change; the notification's
    /// object is the storage. Not posted when a change leaves the storage as it was (storing an identical cookie,
    /// deleting an absent one).
    public static let NSHTTPCookieManagerCookiesChanged = Notification.Name(
        rawValue: "NSHTTPCookieManagerCookiesChangedNotification")

    /// Posted on `NotificationCenter.default` when the cookie accept policy of an ``HTTPCookieStorage`` changes; the
    /// notification's object is the storage.
    public static let NSHTTPCookieManagerAcceptPolicyChanged = Notification.Name(
        rawValue: "NSHTTPCookieManagerAcceptPolicyChangedNotification")
}
