import CourierHTTP
import Foundation
import NIOConcurrencyHelpers
import NIOCore

/// A custom `URLProtocol` as a response source: an instance of the class that claimed the request runs on a
/// ``ProtocolThread`` of its own, and what it tells its `URLProtocolClient` becomes the source's events, in order.
///
/// - `didReceive(_:cacheStoragePolicy:)`, `didLoad`, `urlProtocolDidFinishLoading`, `didFailWithError` are the head,
///   body parts, end and failure (the engine goes by the failure's `URLError` code, `.unknown` for another type;
///   the app is given the protocol's error unchanged). Body parts loaded before the response wait for it; an end
///   without any response comes after a plain response of unknown length.
/// - `wasRedirectedTo:redirectResponse:` hands the redirect to the engine's redirect stage (and so to the delegate);
///   following it starts the lookup again for the new request.
/// - `cachedResponseIsValid` answers with the cached response the protocol names.
/// - `didReceive challenge` asks the task's delegate (see ``ProtocolChallengeRelay``) and answers the challenge's
///   sender.
///
/// Events are queued and handed on in order; while the engine has the source paused (a suspended task, a consumer
/// that is behind) they wait, and once more than ``bufferLimit`` body bytes wait, the protocol's thread blocks in
/// `didLoad` until the source resumes: backpressure, as a socket would give. `stopLoading` runs on the protocol's
/// thread when the task is cancelled, redirected, or done, as on Darwin; then the thread ends.
final class ProtocolResponseSource: ResponseSource, @unchecked Sendable {
    static let bufferLimit = 1 << 20

    enum Event {
        case response(URLResponse)
        case redirect(URLRequest, URLResponse)
        case data(Data)
        case finish
        case fail(TransferError)
    }

    private struct State {
        var consumer: (any ResponseSourceConsumer)?
        var queue: [Event] = []
        var queuedBytes = 0
        var paused = false
        var delivering = false
        var ended = false
        var instance: URLProtocol?
        /// Whether a response (or a redirect) was queued.
        var responded = false
        /// Body parts the protocol loaded before any response: queued behind the response when it comes.
        var early: [Event] = []
    }

    private let protocolClass: URLProtocol.Type
    var origin: TransactionRecord.Origin { .local }
    private let request: URLRequest
    private let task: URLSessionTask?
    private let cachedResponse: CachedURLResponse?
    private let state = NIOLockedValueBox(State())
    /// Signalled whenever the protocol's thread may stop waiting in `didLoad`.
    private let room = NSCondition()
    private let thread = ProtocolThread()

    init(
        protocolClass: URLProtocol.Type, request: URLRequest, task: URLSessionTask?, cachedResponse: CachedURLResponse?
    ) {
        self.protocolClass = protocolClass
        self.request = request
        self.task = task
        self.cachedResponse = cachedResponse
    }

    func start(_ consumer: any ResponseSourceConsumer) {
        state.withLockedValue { $0.consumer = consumer }
        let client = ProtocolClientBridge(source: self)
        thread.perform { [self] in
            // The task's current request may differ from the canonical one: the task form only when they agree.
            let instance = protocolClass.init(request: request, cachedResponse: cachedResponse, client: client)
            if let task { instance.attach(task) }
            guard
                state.withLockedValue({ state in
                    state.instance = instance
                    return !state.ended
                })
            else { return }
            instance.startLoading()
        }
    }

    func pause() {
        state.withLockedValue { $0.paused = true }
    }

    func resume() {
        state.withLockedValue { $0.paused = false }
        pump()
        wakeProtocolThread()
    }

    func cancel() {
        end()
    }

    func drain(then completion: @escaping @Sendable () -> Void) {
        end()
        completion()
    }

    /// No more events; the protocol is stopped on its thread, which then ends.
    private func end() {
        let instance = state.withLockedValue { state -> URLProtocol? in
            guard !state.ended else { return nil }
            state.ended = true
            state.consumer = nil
            state.queue = []
            state.early = []
            state.queuedBytes = 0
            return state.instance
        }
        wakeProtocolThread()
        // Without an instance there is nothing to stop (the start, if handed over, sees `ended` and returns), and a
        // source that was never started has no thread to start for it.
        if let instance { thread.perform { instance.stopLoading() } }
        thread.stop()
    }

    // MARK: - From the client (the protocol's thread, or any)

    func enqueue(_ event: Event) {
        var byteCount = 0
        if case .data(let data) = event { byteCount = data.count }
        let accepted = state.withLockedValue { state -> Bool in
            guard !state.ended else { return false }
            switch event {
            case .response:
                state.queue.append(event)
                if !state.responded {
                    state.responded = true
                    state.queue += state.early
                    state.early = []
                }
            case .data where !state.responded:
                state.early.append(event)
            case .finish where !state.responded:
                // An end without any response: the engine waits for a head first, so without one the task would
                // wait for ever. The load stands for itself, as a plain response of unknown length.
                state.responded = true
                state.queue.append(.response(impliedResponse()))
                state.queue += state.early
                state.early = []
                state.queue.append(event)
            case .redirect:
                state.responded = true
                state.queue.append(event)
            case .data, .finish, .fail:
                state.queue.append(event)
            }
            state.queuedBytes += byteCount
            return true
        }
        guard accepted else { return }
        pump()
        if byteCount > 0 { waitForRoom() }
    }

    /// The response of a protocol that loaded without giving one: plain, of unknown length and type.
    private func impliedResponse() -> URLResponse {
        URLResponse(
            url: request.url ?? URL(fileURLWithPath: "/"), mimeType: nil, expectedContentLength: -1,
            textEncodingName: nil)
    }

    /// The cached response the protocol declared valid, delivered as its answer: the one it names, which need not be
    /// the one it was created with (a protocol may keep responses of its own, or the session may have no cache).
    func deliverCachedResponse(_ cachedResponse: CachedURLResponse) {
        enqueue(.response(cachedResponse.response))
        if !cachedResponse.data.isEmpty { enqueue(.data(cachedResponse.data)) }
        enqueue(.finish)
    }

    /// The task whose delegate a challenge goes to.
    var challengedTask: URLSessionTask? { task }

    /// Hands queued events to the consumer in order, one caller at a time, until the queue is empty or the
    /// source is paused. Terminal events end the source.
    private func pump() {
        while true {
            let next = state.withLockedValue { state -> (Event, any ResponseSourceConsumer)? in
                guard !state.delivering, !state.paused, !state.ended, let consumer = state.consumer,
                    !state.queue.isEmpty
                else { return nil }
                state.delivering = true
                let event = state.queue.removeFirst()
                if case .data(let data) = event { state.queuedBytes -= data.count }
                return (event, consumer)
            }
            guard let (event, consumer) = next else { return }
            switch event {
            case .response(let response):
                consumer.sourceDidReceive(response: response)
            case .redirect(let request, let response):
                consumer.sourceDidRedirect(to: request, response: response)
                consumer.sourceDidFinish()
            case .data(let data):
                consumer.sourceDidReceive(part: ByteBuffer(bytes: data))
            case .finish:
                consumer.sourceDidFinish()
            case .fail(let error):
                consumer.sourceDidFail(error)
            }
            state.withLockedValue { $0.delivering = false }
            wakeProtocolThread()
            switch event {
            case .finish, .fail, .redirect: end()
            default: break
            }
        }
    }

    /// Blocks the protocol's thread while too many body bytes wait for a paused consumer.
    private func waitForRoom() {
        room.lock()
        defer { room.unlock() }
        while state.withLockedValue({ !$0.ended && $0.paused && $0.queuedBytes > Self.bufferLimit }) {
            room.wait()
        }
    }

    private func wakeProtocolThread() {
        room.lock()
        room.broadcast()
        room.unlock()
    }
}
