import Foundation

extension NSNotification.Name {
    /// Posted on `NotificationCenter.default` when the credentials of a ``URLCredentialStorage`` change; the
    /// notification's object is the storage. Not posted when a change leaves the storage as it was.
    public static let NSURLCredentialStorageChanged = NSNotification.Name(
        rawValue: "NSURLCredentialStorageChangedNotification")
}
