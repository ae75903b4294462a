import CourierHTTP
import CourierTransport
import Foundation
import NIOCore

/// Where an attempt's response comes from: the network today; a cached response, a custom `URLProtocol` or a
/// `data:`/`file:` loader as they land. Every source produces the same events with the same backpressure
/// contract, so every delivery mode (delegate, completion handler, async bytes, download file) works for every
/// source.
///
/// The engine calls these methods on its executor only; `start` once, then any of the others.
protocol ResponseSource: AnyObject, Sendable {
    /// Where the response comes from, for the task's metrics.
    var origin: TransactionRecord.Origin { get }
    /// Starts producing events for `consumer`.
    func start(_ consumer: any ResponseSourceConsumer)
    /// Stops producing body parts until ``resume()`` (no buffer grows meanwhile).
    func pause()
    /// Continues after ``pause()``.
    func resume()
    /// Stops for good; the consumer may still get one failure.
    func cancel()
    /// Drops the rest of the body so that the underlying connection can serve a follow-up request; `completion`
    /// runs once when that is done (or the connection was closed instead). No events follow.
    func drain(then completion: @escaping @Sendable () -> Void)
}

/// Receives one source's events. Order: zero or more `didSendBodyData`, one `didReceive(response:)`, zero or
/// more `didReceive(part:)`, then exactly one of `didFinish` or `didFail` (a failure may come at any point).
/// Called on any thread (an event loop for the network); implementations hop to the engine's executor.
protocol ResponseSourceConsumer: Sendable {
    func sourceDidSendBodyData(bytesSent: Int64, totalBytesSent: Int64)
    /// A 1xx response other than 100 and 101 arrived before the final one (observation: no decision waits on it).
    func sourceDidReceiveInformational(_ response: HTTPURLResponse)
    func sourceDidReceive(response: URLResponse)
    /// No network path leads to the host and the source waits for one (`waitsForConnectivity`).
    func sourceIsWaitingForConnectivity()
    /// Instead of a head: the source (a custom `URLProtocol`) was redirected to `request` by `response`; the
    /// redirect stage decides, as for a `3xx` with a `Location`.
    func sourceDidRedirect(to request: URLRequest, response: URLResponse)
    func sourceDidReceive(part: ByteBuffer)
    func sourceDidFinish()
    func sourceDidFail(_ error: TransferError)
    func sourceDidCollect(_ timeline: TransportTimeline)
    /// Runs `body` once the events handed over so far have been handled, so that a `pause()` they caused has reached
    /// the source. A source that produces faster than a socket (a file read from the page cache) paces itself with
    /// it: without, it would read ahead of a slow consumer for as long as the engine is busy.
    func sourceAfterEventsHandled(_ body: @escaping @Sendable () -> Void)
}
