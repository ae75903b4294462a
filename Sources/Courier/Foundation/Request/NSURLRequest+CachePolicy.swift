extension NSURLRequest {
    /// Constants that specify how a request interacts with the URL cache (also known as `URLRequest.CachePolicy`).
    public enum CachePolicy: UInt, Sendable {
        /// Use the caching logic defined in the protocol implementation.
        case useProtocolCachePolicy = 0
        /// Load from the origin source, ignoring local cache data.
        case reloadIgnoringLocalCacheData = 1
        /// Ignore local cache data and instruct proxies and intermediates to disregard their caches.
        case reloadIgnoringLocalAndRemoteCacheData = 4
        /// Use existing cache data regardless of age or expiration; load from the origin if there is none.
        case returnCacheDataElseLoad = 2
        /// Use existing cache data regardless of age or expiration; fail if there is none.
        case returnCacheDataDontLoad = 3
        /// Use cache data if the origin source validates it; otherwise load from the origin.
        case reloadRevalidatingCacheData = 5

        /// Another name for ``reloadIgnoringLocalCacheData``.
        public static var reloadIgnoringCacheData: NSURLRequest.CachePolicy { .reloadIgnoringLocalCacheData }
    }
}
