import CourierHTTP

/// The connection side of the transport boundary: something that can run an exchange. An HTTP/1.1 connection
/// runs one at a time; an HTTP/2 connection would run each exchange on a stream of its own.
///
/// The pool leases an executor to a ``TransportExchange``; the exchange then talks to it only through these
/// calls, which hop to the executor's event loop.
protocol ExchangeExecutor: AnyObject, Sendable {
    /// Runs `exchange`; `isReused` when the connection served an earlier request.
    func execute(_ exchange: TransportExchange, isReused: Bool)
    /// Stops `exchange` if it runs here.
    func cancel(_ exchange: TransportExchange, error: TransferError)
    /// Applies `exchange`'s current pause wish.
    func applyPause(for exchange: TransportExchange)
    /// Reads and drops the rest of `exchange`'s response, closing the connection beyond `limit` bytes.
    func drain(_ exchange: TransportExchange, limit: Int)
}
