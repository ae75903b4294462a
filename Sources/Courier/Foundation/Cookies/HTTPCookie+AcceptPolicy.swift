extension HTTPCookie {
    /// The policies a cookie storage can follow when accepting cookies.
    public enum AcceptPolicy: UInt, Sendable {
        /// Accept all cookies.
        case always = 0
        /// Reject all cookies.
        case never = 1
        /// Accept cookies only from the main document's domain.
        case onlyFromMainDocumentDomain = 2
    }
}
