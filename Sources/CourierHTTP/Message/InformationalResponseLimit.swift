/// How many informational (1xx) responses a request may get before its final one (RFC 9110 §15.2 sets no bound).
///
/// Each one is bytes from the server, so each restarts the request timeout (Apple documents
/// `timeoutIntervalForRequest` as the wait for additional data), and each but `100 Continue` goes to the app's
/// delegate: a server that sends them without end (`102 Processing` every few seconds, or a flood of them) would keep
/// a task alive until its resource timeout (a week by default) and queue delegate calls without bound. Servers send a
/// few (a `100`, one or two `103 Early Hints`, a `102` now and then on a long operation), so the bound is generous;
/// past it the server has broken the exchange (`badServerResponse`).
package enum InformationalResponseLimit {
    /// The most informational responses accepted before the final one.
    package static let maximumCount = 100

    /// Whether `count` informational responses to one request are more than a server may send.
    package static func isExceeded(by count: Int) -> Bool {
        count > maximumCount
    }
}
