import Foundation

/// The sender of the challenges Courier makes: apps answer through the completion handler, as with every
/// URLSession delegate; the old-style sender calls do nothing.
final class CompletionHandlerChallengeSender: NSObject, URLAuthenticationChallengeSender {
    func use(_ credential: URLCredential, for challenge: URLAuthenticationChallenge) {}
    func continueWithoutCredential(for challenge: URLAuthenticationChallenge) {}
    func cancel(_ challenge: URLAuthenticationChallenge) {}
}
