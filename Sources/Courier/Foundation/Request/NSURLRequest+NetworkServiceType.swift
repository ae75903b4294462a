extension NSURLRequest {
    /// Constants that describe the kind of traffic a request carries (also known as
    /// `URLRequest.NetworkServiceType`).
    public enum NetworkServiceType: UInt, Sendable {
        /// Standard network traffic.
        case `default` = 0
        /// Voice over IP control traffic.
        case voip = 1
        /// Video traffic.
        case video = 2
        /// Background traffic.
        case background = 3
        /// Voice data.
        case voice = 4
        /// Data the user is actively waiting for.
        case responsiveData = 6
        /// Streaming audio and video data.
        case avStreaming = 8
        /// Responsive (live) audio and video data.
        case responsiveAV = 9
        /// Call signaling.
        case callSignaling = 11

        /// FoundationNetworking's name for ``callSignaling``.
        public static var networkServiceTypeCallSignaling: NSURLRequest.NetworkServiceType { .callSignaling }
    }
}
