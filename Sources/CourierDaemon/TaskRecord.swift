import Courier
import CourierHTTP
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
    /// The partial download: a file in the task's folder whose first `writtenBytes` bytes were written (they
    /// survive a crash of the daemon, in the page cache, as long as the machine does not restart: `writtenBoot`) and
    /// whose first `durableBytes` were flushed to disk (they survive a power cut too), all of the representation
    /// named by the validators.
    var partialFileName: String?
    var durableBytes: Int64 = 0
    var writtenBytes: Int64 = 0
    var writtenBoot: String?
    var entityTag: String?
    var lastModified: String?
    var expectedTotal: Int64 = -1
    /// The URL the bytes came from (after redirects).
    var downloadURL: URL?
    var bytesReceived: Int64 = 0
    var bytesSent: Int64 = 0
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

    /// Rows of another version of the daemon decode: a field it did not write takes its default (keys this version
    /// does not know are ignored).
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        identifier = try container.decode(String.self, forKey: .identifier)
        spec = try container.decode(BackgroundTaskSpec.self, forKey: .spec)
        state = try container.decode(BackgroundTaskSnapshot.State.self, forKey: .state)
        created = try container.decode(Date.self, forKey: .created)
        notBefore = try container.decodeIfPresent(Date.self, forKey: .notBefore)
        failuresWithoutProgress = try container.decodeIfPresent(Int.self, forKey: .failuresWithoutProgress) ?? 0
        partialFileName = try container.decodeIfPresent(String.self, forKey: .partialFileName)
        durableBytes = try container.decodeIfPresent(Int64.self, forKey: .durableBytes) ?? 0
        writtenBytes = try container.decodeIfPresent(Int64.self, forKey: .writtenBytes) ?? 0
        writtenBoot = try container.decodeIfPresent(String.self, forKey: .writtenBoot)
        entityTag = try container.decodeIfPresent(String.self, forKey: .entityTag)
        lastModified = try container.decodeIfPresent(String.self, forKey: .lastModified)
        expectedTotal = try container.decodeIfPresent(Int64.self, forKey: .expectedTotal) ?? -1
        downloadURL = try container.decodeIfPresent(URL.self, forKey: .downloadURL)
        bytesReceived = try container.decodeIfPresent(Int64.self, forKey: .bytesReceived) ?? 0
        bytesSent = try container.decodeIfPresent(Int64.self, forKey: .bytesSent) ?? 0
        response = try container.decodeIfPresent(CodableResponse.self, forKey: .response)
        cancelRequested = try container.decodeIfPresent(Bool.self, forKey: .cancelRequested) ?? false
        outcome = try container.decodeIfPresent(BackgroundOutcome.self, forKey: .outcome)
    }

    var key: TaskKey { TaskKey(identifier: identifier, task: spec.task) }

    /// Where the partial file can be continued from on a machine booted as `boot`: the written bytes when it has
    /// not restarted since they were written, else only the flushed ones.
    func resumeOffset(boot: String?) -> Int64 {
        guard let boot, writtenBoot == boot else { return durableBytes }
        return max(writtenBytes, durableBytes)
    }

    /// The partial file is gone or belongs to another representation: the download starts over.
    mutating func forgetPartial() {
        partialFileName = nil
        durableBytes = 0
        writtenBytes = 0
        writtenBoot = nil
        entityTag = nil
        lastModified = nil
    }

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

extension TaskRecord {
    /// Takes the partial file of resume data (a failed attempt's, or the app's from an earlier task) as the one to
    /// continue: its bytes were written on this boot; none is known to be flushed unless it is the same file.
    mutating func adoptPartial(_ data: ResumeData, boot: String?) {
        if partialFileName != data.tempFileName { durableBytes = 0 }
        durableBytes = min(durableBytes, data.bytesReceived)
        partialFileName = data.tempFileName
        writtenBytes = data.bytesReceived
        writtenBoot = boot
        entityTag = data.entityTag
        lastModified = data.serverDownloadDate
        expectedTotal = data.expectedTotalLength ?? expectedTotal
        downloadURL = data.downloadURL
    }
}

/// This boot of the machine (`/proc/sys/kernel/random/boot_id`): bytes written but not flushed survive a crash of
/// the daemon, never a restart of the machine.
enum BootIdentifier {
    static let current: String? = {
        guard let text = try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8) else {
            return nil
        }
        let identifier = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return identifier.isEmpty ? nil : identifier
    }()
}
