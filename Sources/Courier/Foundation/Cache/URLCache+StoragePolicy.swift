extension URLCache {
    /// Where a cached response may be stored.
    public enum StoragePolicy: UInt, Sendable {
        /// Storage is allowed, in memory or on disk.
        case allowed = 0
        /// Storage is allowed in memory only.
        case allowedInMemoryOnly = 1
        /// Storage is not allowed.
        case notAllowed = 2
    }
}
