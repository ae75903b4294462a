import Foundation
import NIOPosix

/// Posts the change notifications of the cookie and credential stores.
///
/// Observers are app code, which never runs on an event loop: a change the engine makes there (cookies a
/// response set) is announced from a background queue; a change the app makes is announced on its own thread,
/// before the call returns, as Foundation does.
enum ChangeNotification {
    /// Posts `name` with `object` on `NotificationCenter.default`.
    static func post(_ name: Notification.Name, object: AnyObject & Sendable) {
        if MultiThreadedEventLoopGroup.currentEventLoop == nil {
            NotificationCenter.default.post(name: name, object: object)
        } else {
            DispatchQueue.global().async { NotificationCenter.default.post(name: name, object: object) }
        }
    }
}
