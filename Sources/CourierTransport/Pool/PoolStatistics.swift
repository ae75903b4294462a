/// A transport's connection pool at one moment, all hosts together: what metrics gauges show.
public struct PoolStatistics: Sendable, Equatable {
    /// Increases with every report; a report with a lower number than one already seen is older (reports made on
    /// two threads may arrive in either order).
    public var sequence: Int
    /// Connections being opened.
    public var connecting: Int
    /// Ready connections that run nothing (HTTP/2 connections without open streams included).
    public var idle: Int
    /// Ready connections that run at least one exchange.
    public var busy: Int
    /// Requests waiting for a connection.
    public var waiting: Int

    /// Creates statistics.
    public init(sequence: Int, connecting: Int, idle: Int, busy: Int, waiting: Int) {
        self.sequence = sequence
        self.connecting = connecting
        self.idle = idle
        self.busy = busy
        self.waiting = waiting
    }
}
