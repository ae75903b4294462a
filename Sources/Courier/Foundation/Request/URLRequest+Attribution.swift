extension URLRequest {
    /// Whether a request was initiated by the developer or by the user.
    public enum Attribution: UInt, Sendable {
        /// The developer initiated the request.
        case developer = 0
        /// The user initiated the request, for example by entering a URL.
        case user = 1
    }
}
