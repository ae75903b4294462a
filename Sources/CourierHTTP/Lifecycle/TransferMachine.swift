/// The running side of one task, as a value: events in, actions out.
///
/// `TaskLifecycle` answers what `URLSessionTask.state` says; this machine decides what the engine does while the
/// task loads: when an attempt is prepared and started, when the response side runs, which body parts are
/// delivered and which are held (while the task is suspended or a decision is pending), when the source is
/// paused, and how the task ends. It holds no locks and does no I/O; its owner steps it on one serial executor
/// and performs the returned actions in order.
///
/// Every terminal path goes through one place (``finish(_:)``), which emits ``Action/complete(_:)`` exactly once;
/// events after that are ignored. Events of an abandoned attempt (one replaced by a follow-up) are ignored too:
/// each attempt has a number, and transport events carry it.
///
/// `Part` is the body part type (the engine uses NIO's `ByteBuffer`; tests use anything).
public struct TransferMachine<Part: Sendable>: Sendable {
    /// Where the task is.
    public enum Phase: Sendable, Equatable {
        /// Created; ``start(delayed:)`` not called yet.
        case idle
        /// Waiting for `earliestBeginDate`, then for the app's answer to the delayed request.
        case waitingToBegin
        /// The request side of the chain runs for this attempt.
        case preparing(attempt: Int)
        /// The source runs this attempt; no response head yet.
        case requesting(attempt: Int)
        /// A response head arrived while the task was suspended: the response side runs on ``resume()``.
        case headHeld(attempt: Int)
        /// The response side (redirect, authentication, storage, the app's decision) runs for this attempt's head.
        case responding(attempt: Int)
        /// A follow-up request was chosen: the old attempt's body is drained before the next attempt starts.
        case draining(nextAttempt: Int)
        /// The body flows to the consumer.
        case receiving(attempt: Int)
        /// The body ended and was handed on; the consumer closes its file or buffer.
        case finishing
        /// Done; every further event is ignored.
        case completed
    }

    /// How a task ended.
    public enum Outcome: Sendable, Equatable {
        /// The body was complete and the consumer closed it.
        case success
        /// The task failed, was cancelled or timed out.
        case failure(TransferError, producingResumeData: Bool)
    }

    /// What the owner must do, in order.
    public enum Action: Sendable {
        /// Schedule the `earliestBeginDate` timer; ``beginTimerFired()`` follows.
        case armBeginTimer
        /// Ask the app whether to load the delayed request (`willBeginDelayedRequest`).
        case askToBegin
        /// Start the resource timer (`timeoutIntervalForResource`).
        case startResourceClock
        /// Stop counting resource time (suspended) / count again (resumed).
        case pauseResourceClock
        case resumeResourceClock
        /// Run the request side of the chain for this attempt; ``prepared(attempt:)`` or ``failed(attempt:_:)``
        /// follows.
        case prepare(attempt: Int)
        /// Start the response source the request side produced for this attempt.
        case startSource(attempt: Int)
        /// Stop / continue reading from the current source.
        case pauseSource
        case resumeSource
        /// Run the response side for this attempt's head; ``responseAccepted(attempt:)``,
        /// ``followUp(attempt:)`` or ``failed(attempt:_:)`` follows.
        case runResponseSide(attempt: Int)
        /// Hand the accepted response to the consumer.
        case deliverHead
        /// Hand a body part to the consumer.
        case deliver(Part)
        /// The body ended: the consumer closes what it wrote; ``consumerClosed(_:)`` follows.
        case deliverEnd
        /// Let the source read and discard the rest of this attempt's body (so its connection can be reused);
        /// ``drained()`` follows.
        case drainSource(attempt: Int)
        /// Stop the current source for good.
        case cancelSource
        /// The task is over: report the outcome. Emitted exactly once.
        case complete(Outcome)
    }

    public var phase: Phase { _phase }
    @usableFromInline var _phase: Phase = .idle
    /// The current attempt's number (0 before the first).
    public var attempt: Int { _attempt }
    @usableFromInline var _attempt: Int = 0
    /// Whether the app suspended the task.
    public var isSuspended: Bool { _isSuspended }
    @usableFromInline var _isSuspended: Bool = false
    /// Whether the consumer asked for a pause (its buffer is full).
    public var isBackpressured: Bool { _isBackpressured }
    @usableFromInline var _isBackpressured: Bool = false
    /// Whether the response side waits for an answer (a delegate decision, a storage read).
    public var isAwaitingDecision: Bool { _isAwaitingDecision }
    @usableFromInline var _isAwaitingDecision: Bool = false
    /// Whether the source is paused, as last told.
    public var isSourcePaused: Bool { _isSourcePaused }
    @usableFromInline var _isSourcePaused: Bool = false
    /// Body parts and the end received while holding, in order.
    @usableFromInline var held: [Part] = []
    @usableFromInline var heldEnd = false

    @inlinable public init() {}

    /// Whether body events are held rather than delivered.
    @inlinable var isHolding: Bool { isSuspended }

    // MARK: - Events from the app

    /// `resume()` for the first time. `delayed` when `earliestBeginDate` is in the future.
    @inlinable public mutating func start(delayed: Bool) -> Actions {
        guard case .idle = phase else { return Actions() }
        if delayed {
            _phase = .waitingToBegin
            return Actions(.armBeginTimer)
        }
        return beginLoading()
    }

    /// The `earliestBeginDate` arrived.
    @inlinable public mutating func beginTimerFired() -> Actions {
        guard case .waitingToBegin = phase else { return Actions() }
        return Actions(.askToBegin)
    }

    /// The app let the delayed request load (possibly replaced; the owner keeps the request).
    @inlinable public mutating func beginAnswered() -> Actions {
        guard case .waitingToBegin = phase else { return Actions() }
        return beginLoading()
    }

    @inlinable mutating func beginLoading() -> Actions {
        _attempt += 1
        _phase = .preparing(attempt: attempt)
        var actions = Actions(.startResourceClock)
        if isSuspended { actions.append(.pauseResourceClock) }
        actions.append(.prepare(attempt: attempt))
        return actions
    }

    /// `suspend()`.
    @inlinable public mutating func suspend() -> Actions {
        guard !isSuspended, !isOver else { return Actions() }
        _isSuspended = true
        var actions = Actions(.pauseResourceClock)
        syncSource(&actions)
        return actions
    }

    /// `resume()` after `suspend()`: held events are delivered, in order, and the source continues.
    @inlinable public mutating func resume() -> Actions {
        guard isSuspended, !isOver else { return Actions() }
        _isSuspended = false
        var actions = Actions(.resumeResourceClock)
        switch phase {
        case .headHeld(let current):
            _phase = .responding(attempt: current)
            actions.append(.runResponseSide(attempt: current))
        case .receiving:
            releaseHeld(&actions)
        default:
            break
        }
        syncSource(&actions)
        return actions
    }

    /// `cancel()` or `cancel(byProducingResumeData:)`.
    @inlinable public mutating func cancel(producingResumeData: Bool = false) -> Actions {
        guard !isOver else { return Actions() }
        return finish(.failure(.cancelled(), producingResumeData: producingResumeData))
    }

    /// The resource timer fired.
    @inlinable public mutating func resourceTimerFired() -> Actions {
        guard !isOver else { return Actions() }
        return finish(.failure(.timedOut("the resource timeout expired"), producingResumeData: false))
    }

    // MARK: - Events from the chain and the source

    /// The request side produced a source for `attempt`.
    @inlinable public mutating func prepared(attempt current: Int) -> Actions {
        guard case .preparing(let preparing) = phase, preparing == current else { return Actions() }
        _phase = .requesting(attempt: current)
        var actions = Actions(.startSource(attempt: current))
        syncSource(&actions, force: true)
        return actions
    }

    /// The final response head of `attempt` arrived.
    @inlinable public mutating func head(attempt current: Int) -> Actions {
        guard case .requesting(let requesting) = phase, requesting == current else { return Actions() }
        if isSuspended {
            _phase = .headHeld(attempt: current)
            return Actions()
        }
        _phase = .responding(attempt: current)
        return Actions(.runResponseSide(attempt: current))
    }

    /// The response side waits for an answer: the source pauses until it comes (the body is held meanwhile).
    @inlinable public mutating func awaitingDecision(attempt current: Int) -> Actions {
        guard case .responding(let responding) = phase, responding == current else { return Actions() }
        _isAwaitingDecision = true
        var actions = Actions()
        syncSource(&actions)
        return actions
    }

    /// The response side accepted the head: it and the held body go to the consumer.
    @inlinable public mutating func responseAccepted(attempt current: Int) -> Actions {
        guard case .responding(let responding) = phase, responding == current else { return Actions() }
        _isAwaitingDecision = false
        _phase = .receiving(attempt: current)
        var actions = Actions(.deliverHead)
        releaseHeld(&actions)
        syncSource(&actions)
        return actions
    }

    /// The response side chose a follow-up request (a redirect, a retry with credentials): the current body is
    /// drained and dropped, then the next attempt is prepared.
    @inlinable public mutating func followUp(attempt current: Int) -> Actions {
        guard case .responding(let responding) = phase, responding == current else { return Actions() }
        _isAwaitingDecision = false
        _isBackpressured = false
        held = []
        heldEnd = false
        _attempt += 1
        _phase = .draining(nextAttempt: attempt)
        _isSourcePaused = false
        return Actions(.drainSource(attempt: current))
    }

    /// The old attempt's source was drained (or closed): the next attempt is prepared.
    @inlinable public mutating func drained() -> Actions {
        guard case .draining(let next) = phase else { return Actions() }
        _phase = .preparing(attempt: next)
        return Actions(.prepare(attempt: next))
    }

    /// A body part of `attempt`.
    @inlinable public mutating func bodyPart(_ part: Part, attempt current: Int) -> Actions {
        guard current == attempt else { return Actions() }
        switch phase {
        case .receiving where !isHolding && held.isEmpty:
            return Actions(.deliver(part))
        case .receiving, .responding, .headHeld:
            held.append(part)
            return Actions()
        default:
            return Actions()
        }
    }

    /// The body of `attempt` ended normally.
    @inlinable public mutating func end(attempt current: Int) -> Actions {
        guard current == attempt else { return Actions() }
        switch phase {
        case .receiving where !isHolding && held.isEmpty:
            _phase = .finishing
            return Actions(.deliverEnd)
        case .receiving, .responding, .headHeld:
            heldEnd = true
            return Actions()
        default:
            return Actions()
        }
    }

    /// The consumer wants the source paused (`true`) or continued (`false`).
    @inlinable public mutating func backpressure(_ on: Bool) -> Actions {
        guard !isOver, isBackpressured != on else { return Actions() }
        _isBackpressured = on
        var actions = Actions()
        syncSource(&actions)
        return actions
    }

    /// The consumer closed the body it was handed (a download's file): the task succeeds, or fails with `error`.
    @inlinable public mutating func consumerClosed(_ error: TransferError?) -> Actions {
        guard case .finishing = phase else { return Actions() }
        if let error { return finish(.failure(error, producingResumeData: false)) }
        return finish(.success)
    }

    /// `attempt` failed (the chain, the source, or the consumer). Failures of abandoned attempts are ignored.
    @inlinable public mutating func failed(attempt current: Int, _ error: TransferError) -> Actions {
        guard current == attempt, !isOver else { return Actions() }
        if case .draining = phase { return Actions() }
        return finish(.failure(error, producingResumeData: false))
    }

    /// A failure that is not about one attempt (writing the download file, an invalid task).
    @inlinable public mutating func failed(_ error: TransferError) -> Actions {
        guard !isOver else { return Actions() }
        return finish(.failure(error, producingResumeData: false))
    }

    // MARK: - Helpers

    /// Whether the task ended or its body is being closed (a cancel or timeout then changes nothing).
    @inlinable public var isOver: Bool {
        switch phase {
        case .finishing, .completed: return true
        default: return false
        }
    }

    /// The one terminal path.
    @inlinable mutating func finish(_ outcome: Outcome) -> Actions {
        let hadSource: Bool
        switch phase {
        case .requesting, .headHeld, .responding, .receiving, .draining: hadSource = true
        default: hadSource = false
        }
        _phase = .completed
        held = []
        heldEnd = false
        return hadSource ? Actions(.cancelSource, .complete(outcome)) : Actions(.complete(outcome))
    }

    @inlinable mutating func releaseHeld(_ actions: inout Actions) {
        guard !isHolding else { return }
        for part in held { actions.append(.deliver(part)) }
        held = []
        if heldEnd {
            heldEnd = false
            _phase = .finishing
            actions.append(.deliverEnd)
        }
    }

    /// Tells the source to pause or continue when the wish changed (`force` for a new source, which starts
    /// reading: only a pause is sent).
    @inlinable mutating func syncSource(_ actions: inout Actions, force: Bool = false) {
        let wanted = isSuspended || isBackpressured || isAwaitingDecision
        if force {
            _isSourcePaused = wanted
            if wanted { actions.append(.pauseSource) }
            return
        }
        guard wanted != isSourcePaused else { return }
        _isSourcePaused = wanted
        switch phase {
        case .requesting, .headHeld, .responding, .receiving:
            actions.append(wanted ? .pauseSource : .resumeSource)
        default:
            // No source runs; the next one starts in the wanted state.
            break
        }
    }
}
