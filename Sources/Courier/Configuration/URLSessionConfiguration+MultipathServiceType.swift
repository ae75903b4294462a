extension URLSessionConfiguration {
    /// The Multipath TCP service types. Linux sessions record the value but always use single-path TCP.
    public enum MultipathServiceType: Int, Sendable {
        /// Multipath TCP is not used.
        case none = 0
        /// Multipath TCP for seamless handover between interfaces.
        case handover = 1
        /// Multipath TCP for low latency.
        case interactive = 2
        /// Multipath TCP aggregating the capacity of several interfaces.
        case aggregate = 3
    }
}
