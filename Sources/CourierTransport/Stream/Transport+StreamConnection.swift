import NIOPosix

extension Transport {
    /// A stream task's raw connection on NIO's shared event loop group, for transports without loops of their own
    /// (test doubles).
    public func makeStreamConnection(
        host: String, port: Int, onEvent: @escaping @Sendable (StreamConnectionEvent) -> Void
    ) -> StreamConnection {
        StreamConnection(
            host: host, port: port, eventLoop: MultiThreadedEventLoopGroup.singleton.next(), onEvent: onEvent)
    }
}
