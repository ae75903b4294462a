import Courier
import Foundation

/// Everything the daemon needs to continue one task after a crash, as it is journaled (JSON in the journal's
/// `record` column): what the app asked for, where the transfer stands and the bytes of it known to be on disk.
struct TaskRecord: Codable, Sendable {
    var identifier: String
    var spec: BackgroundTaskSpec
    var state: BackgroundTaskSnapshot.State
    var created: Date
    /// When the next attempt may start (`earliestBeginDate`, or a retry's backoff).
    var notBefore: Date?
    /// Failures in a row that received no new byte.
    var failuresWithoutProgress = 0
    /// The durable part of the download: a file in the task's folder whose first `durableBytes` bytes were flushed
    /// to disk and belong to the representation named by the validators.
    var partialFileName: String?
    var durableBytes: Int64 = 0
    var entityTag: String?
    var lastModified: String?
    var expectedTotal: Int64 = -1
    /// The URL the bytes came from (after redirects).
    var downloadURL: URL?
    var bytesReceived: Int64 = 0
    var response: CodableResponse?
    /// The app asked to cancel the running attempt.
    var cancelRequested = false
    /// Set once: how the task ended.
    var outcome: BackgroundOutcome?

    init(identifier: String, spec: BackgroundTaskSpec, now: Date) {
        self.identifier = identifier
        self.spec = spec
        self.state = .running
        self.created = now
        self.notBefore = spec.earliestBeginDate
    }

    var key: TaskKey { TaskKey(identifier: identifier, task: spec.task) }

    /// The end of the task's resource timeout.
    var deadline: Date {
        created.addingTimeInterval(max(1, spec.settings.timeoutIntervalForResource))
    }

    var snapshot: BackgroundTaskSnapshot {
        BackgroundTaskSnapshot(
            identifier: identifier,
            task: spec.task,
            kind: spec.kind,
            originalRequest: spec.request,
            state: state,
            bytesReceived: bytesReceived,
            bytesExpectedToReceive: expectedTotal,
            response: response,
            taskDescription: spec.taskDescription
        )
    }
}

/// One task of one session.
struct TaskKey: Hashable, Sendable {
    var identifier: String
    var task: Int
}
