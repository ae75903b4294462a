import Foundation
import NIOConcurrencyHelpers

/// A task that speaks the WebSocket protocol.
///
/// - Note: Not implemented yet: a resumed WebSocket task completes with `URLError(.unsupportedURL)`, and sends
///   and receives fail with the same error.
open class URLSessionWebSocketTask: URLSessionTask, @unchecked Sendable {
    /// A WebSocket message.
    public enum Message: Sendable {
        /// A binary message.
        case data(Data)
        /// A text message.
        case string(String)
    }

    /// The close codes of RFC 6455.
    public enum CloseCode: Int, Sendable {
        case invalid = 0
        case normalClosure = 1000
        case goingAway = 1001
        case protocolError = 1002
        case unsupportedData = 1003
        case noStatusReceived = 1005
        case abnormalClosure = 1006
        case invalidFramePayloadData = 1007
        case policyViolation = 1008
        case messageTooBig = 1009
        case mandatoryExtensionMissing = 1010
        case internalServerError = 1011
        case tlsHandshakeFailure = 1015
    }

    private let closeState = NIOLockedValueBox<(maximumMessageSize: Int, code: CloseCode, reason: Data?)>(
        (1_048_576, .invalid, nil)
    )

    /// The largest message accepted, in bytes (Darwin's default is 1 MiB).
    open var maximumMessageSize: Int {
        get { closeState.withLockedValue { $0.maximumMessageSize } }
        set { closeState.withLockedValue { $0.maximumMessageSize = newValue } }
    }
    /// The close code sent or received; `.invalid` while open.
    open var closeCode: CloseCode { closeState.withLockedValue { $0.code } }
    /// The close reason sent or received.
    open var closeReason: Data? { closeState.withLockedValue { $0.reason } }

    private var unsupportedError: URLError {
        URLError(.unsupportedURL, userInfo: [NSLocalizedDescriptionKey: unsupportedReason ?? ""])
    }

    /// Sends a message.
    open func send(_ message: Message, completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        let error = unsupportedError
        session.dispatcher.async { completionHandler(error) }
    }

    /// Sends a message.
    open func send(_ message: Message) async throws {
        throw unsupportedError
    }

    /// Receives the next message.
    open func receive(completionHandler: @escaping @Sendable (Result<Message, any Error>) -> Void) {
        let error = unsupportedError
        session.dispatcher.async { completionHandler(.failure(error)) }
    }

    /// Receives the next message.
    open func receive() async throws -> Message {
        throw unsupportedError
    }

    /// Sends a ping and returns when the pong arrives.
    ///
    /// - Throws: Always, until WebSocket tasks are implemented: `URLError(.unsupportedURL)` naming the missing
    ///   feature.
    open func sendPing() async throws {
        throw unsupportedError
    }

    /// Sends a ping; the handler runs when the pong arrives.
    open func sendPing(pongReceiveHandler: @escaping @Sendable ((any Error)?) -> Void) {
        let error = unsupportedError
        session.dispatcher.async { pongReceiveHandler(error) }
    }

    /// Closes the WebSocket with a code and reason.
    open func cancel(with closeCode: CloseCode, reason: Data?) {
        closeState.withLockedValue { state in
            state.code = closeCode
            state.reason = reason
        }
        cancel()
    }

    /// Starts the task. Until WebSocket tasks are implemented, the task then completes with
    /// `URLError(.unsupportedURL)` naming the missing feature (reported to the delegate and in ``error``).
    open override func resume() {
        super.resume()
    }

    /// Cancels the task without a close frame (the close code stays as set by ``cancel(with:reason:)``, or
    /// `.invalid`); the task completes with `URLError(.cancelled)`.
    open override func cancel() {
        super.cancel()
    }

    /// The error the task completed with: `URLError(.unsupportedURL)` naming the missing feature once a resumed
    /// task has completed, `URLError(.cancelled)` after ``cancel()``, `nil` before either.
    open override var error: (any Error)? { super.error }

    override var unsupportedReason: String? { "WebSocket tasks are not supported yet (a later Courier release)" }
}
