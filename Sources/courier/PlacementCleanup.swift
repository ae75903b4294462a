import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The files a download's placement makes outside the run's folder while it runs — the empty file that claims a
/// server-chosen name on a file system without hard links, the copy made beside the destination across file
/// systems — so that an interruption removes them instead of leaving an empty or partial file next to the user's.
///
/// A file is either still tracked (and removed by ``abandon()``) or renamed into place, never both: the final rename
/// happens under the same lock as the removal, so an interruption can never remove a file that has just become the
/// user's complete download.
final class PlacementCleanup: Sendable {
    private struct State {
        var paths: Set<String> = []
        var abandoned = false
        /// What ``abandon()`` removed: a rename from or onto one of these must not happen any more (a claim removed
        /// from under a name leaves the name free for someone else's file).
        var removed: Set<String> = []
    }

    private let state = NIOLockedValueBox(State())

    init() {}

    /// Creates a file with `create` (an exclusive `open(2)`, which returns its path and descriptor) and tracks it in
    /// one step, under the lock an interruption takes: no moment exists in which the file is made but not yet known
    /// to the cleanup. Throws `ECANCELED` without creating anything after an interruption.
    func createTracked(_ create: () throws -> (URL, Int32)) throws -> (URL, Int32) {
        try state.withLockedValue { state in
            guard !state.abandoned else { throw OutputSink.posixError(ECANCELED, path: "") }
            let made = try create()
            state.paths.insert(made.0.path)
            return made
        }
    }

    /// A placement that failed gives up a file it made: removed if still tracked. One an interruption already
    /// removed is not touched again (its name may belong to someone else's file by now).
    func removeIfTracked(_ path: String) {
        state.withLockedValue { state in
            if state.paths.remove(path) != nil { unlink(path) }
        }
    }

    /// Renames `source` to `target`, and stops tracking both: the file is the user's from then on. Returns `nil`, or
    /// the error: `ECANCELED` when an interruption removed either (a claim or a copy), the rename's otherwise. A
    /// complete download renamed straight into place after an interruption is still placed: there is nothing of it
    /// to clean up, and refusing would only lose it.
    func rename(_ source: String, to target: String) -> Int32? {
        state.withLockedValue { state in
            // Held across the rename(2): an interruption waits for it rather than removing what it produced.
            guard !state.removed.contains(source), !state.removed.contains(target) else { return ECANCELED }
            guard renameFile(source, target) == 0 else { return errno }
            state.paths.remove(source)
            state.paths.remove(target)
            return nil
        }
    }

    /// The process is being interrupted: removes every tracked file, refuses any later ``createTracked(_:)``, and any
    /// ``rename(_:to:)`` from or onto a removed file.
    func abandon() {
        state.withLockedValue { state in
            state.abandoned = true
            // Unlinked under the lock, so that a rename cannot slip in between the removal and its record.
            for path in state.paths { unlink(path) }
            state.removed.formUnion(state.paths)
            state.paths = []
        }
    }
}

/// rename(2), named apart from ``PlacementCleanup/rename(_:to:)``.
private func renameFile(_ source: String, _ target: String) -> Int32 {
    rename(source, target)
}
