import CourierTestSupport
import Foundation
import Testing

@testable import courier

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// How a finished download becomes the user's file when the server chose its name (`-O -J`): never over an existing
/// file, also on a file system that cannot make hard links (link(2) is replaced by one that fails as there).
@Suite("courier: placing a download without replacing")
struct CLIPlacementTests {
    /// A link(2) that fails with `code`, as on a file system without hard links.
    private static func failingLink(_ code: Int32) -> (String, String) -> Int32 {
        { _, _ in
            errno = code
            return -1
        }
    }

    private func download(in folder: URL, _ text: String) throws -> URL {
        let location = folder.appendingPathComponent("download.tmp")
        try Data(text.utf8).write(to: location)
        return location
    }

    /// A renameat2(2) that fails with `code`, as where `RENAME_NOREPLACE` is not supported.
    private static func failingRename(_ code: Int32) -> (String, String) -> Int32 {
        { _, _ in
            errno = code
            return -1
        }
    }

    /// Without hard links, by renameat2's `RENAME_NOREPLACE` (the system's) or, without that too, by claiming the
    /// name first.
    @Test(arguments: [EPERM, EOPNOTSUPP], [nil, EINVAL, ENOSYS])
    func withoutHardLinksTheFileIsStillPlaced(code: Int32, renameFailure: Int32?) throws {
        let folder = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let location = try download(in: folder, "complete body")
        let target = folder.appendingPathComponent("chosen.txt")
        let placed = try DownloadPlacement.place(
            location, at: target, replacing: false, link: Self.failingLink(code),
            renameNoReplace: renameFailure.map(Self.failingRename) ?? DownloadPlacement.systemRenameNoReplace)
        #expect(placed.path == target.path)
        #expect(try String(contentsOf: target, encoding: .utf8) == "complete body")
        #expect(!FileManager.default.fileExists(atPath: location.path))
        var info = stat()
        #expect(stat(target.path, &info) == 0)
        #expect(info.st_mode & 0o777 == OutputSink.finalMode(for: folder.appendingPathComponent("absent")))
    }

    /// A file replaced by new content keeps its permission bits, not a set-user-ID or set-group-ID bit: `-o tool`
    /// over a set-user-ID program made the downloaded bytes one.
    @Test func aReplacedFileKeepsItsPermissionsButNotItsSetIDBits() throws {
        let folder = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let target = folder.appendingPathComponent("tool")
        try Data("old program".utf8).write(to: target)
        #expect(chmod(target.path, 0o6750) == 0)
        let location = try download(in: folder, "new content")
        _ = try DownloadPlacement.place(location, at: target, replacing: true)
        var info = stat()
        #expect(stat(target.path, &info) == 0)
        #expect(info.st_mode & 0o7777 == 0o750)
        #expect(try String(contentsOf: target, encoding: .utf8) == "new content")
    }

    @Test(arguments: [nil, EINVAL])
    func withoutHardLinksAnExistingFileIsLeftAlone(renameFailure: Int32?) throws {
        let folder = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let location = try download(in: folder, "new body")
        let target = folder.appendingPathComponent("chosen.txt")
        try Data("the user's file".utf8).write(to: target)
        #expect(throws: (any Error).self) {
            try DownloadPlacement.place(
                location, at: target, replacing: false, link: Self.failingLink(EPERM),
                renameNoReplace: renameFailure.map(Self.failingRename) ?? DownloadPlacement.systemRenameNoReplace)
        }
        #expect(try String(contentsOf: target, encoding: .utf8) == "the user's file")
        #expect(FileManager.default.fileExists(atPath: location.path))
    }

    /// A failure that is about the target (here: permission), not about hard links, is reported as it is: no name is
    /// claimed and nothing is placed.
    @Test func anotherLinkFailureIsReported() throws {
        let folder = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let location = try download(in: folder, "body")
        let target = folder.appendingPathComponent("chosen.txt")
        #expect(throws: (any Error).self) {
            try DownloadPlacement.place(location, at: target, replacing: false, link: Self.failingLink(EACCES))
        }
        #expect(!FileManager.default.fileExists(atPath: target.path))
        #expect(FileManager.default.fileExists(atPath: location.path))
    }

    /// The system's renameat2 with `RENAME_NOREPLACE` (found at run time): a free name is taken, a taken one is
    /// refused with `EEXIST`.
    @Test func renameWithoutReplacingRefusesATakenName() throws {
        let folder = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let source = try download(in: folder, "body")
        let taken = folder.appendingPathComponent("taken")
        try Data("kept".utf8).write(to: taken)
        #expect(DownloadPlacement.systemRenameNoReplace(source.path, taken.path) == -1)
        #expect(errno == EEXIST)
        #expect(try String(contentsOf: taken, encoding: .utf8) == "kept")
        let free = folder.appendingPathComponent("free")
        #expect(DownloadPlacement.systemRenameNoReplace(source.path, free.path) == 0)
        #expect(try String(contentsOf: free, encoding: .utf8) == "body")
    }

    /// An interruption that comes while the name is claimed (no hard links, no `RENAME_NOREPLACE`) removes the claim:
    /// no empty file is left under the server's name, and nothing is placed after it.
    @Test func anInterruptionDuringAClaimLeavesNoEmptyFile() throws {
        let folder = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let location = try download(in: folder, "body")
        let target = folder.appendingPathComponent("chosen.txt")
        let cleanup = PlacementCleanup()
        #expect(throws: (any Error).self) {
            try DownloadPlacement.place(
                location, at: target, replacing: false, cleanup: cleanup, link: Self.failingLink(EPERM),
                renameNoReplace: { _, _ in
                    cleanup.abandon()  // the signal arrives here
                    errno = EINVAL
                    return -1
                })
        }
        #expect(!FileManager.default.fileExists(atPath: target.path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["download.tmp"])
    }

    /// A dangling symbolic link at the server's name is an existing entry, as for curl's `O_EXCL` open: the download
    /// is not created where the link points, by link(2), by renameat2 or by a claim, and the link stays as it was.
    @Test(arguments: [nil, EPERM], [nil, EINVAL])
    func aDanglingLinkAtTheNameIsNotFollowed(linkFailure: Int32?, renameFailure: Int32?) throws {
        let folder = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let location = try download(in: folder, "body")
        let pointedTo = folder.appendingPathComponent("elsewhere.txt")
        let named = folder.appendingPathComponent("chosen.txt")
        try FileManager.default.createSymbolicLink(atPath: named.path, withDestinationPath: pointedTo.path)
        let hardLink: (String, String) -> Int32 = linkFailure.map(Self.failingLink) ?? { link($0, $1) }
        #expect(throws: (any Error).self) {
            try DownloadPlacement.place(
                location, at: named, replacing: false, link: hardLink,
                renameNoReplace: renameFailure.map(Self.failingRename) ?? DownloadPlacement.systemRenameNoReplace)
        }
        #expect(!FileManager.default.fileExists(atPath: pointedTo.path))
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: named.path) == pointedTo.path)
        #expect(FileManager.default.fileExists(atPath: location.path))
    }

    @Test func withHardLinksAnExistingFileIsLeftAloneAndANewOneIsPlaced() throws {
        let folder = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let existing = folder.appendingPathComponent("taken.txt")
        try Data("the user's file".utf8).write(to: existing)
        let first = try download(in: folder, "body")
        #expect(throws: (any Error).self) { try DownloadPlacement.place(first, at: existing, replacing: false) }
        #expect(try String(contentsOf: existing, encoding: .utf8) == "the user's file")
        let target = folder.appendingPathComponent("free.txt")
        _ = try DownloadPlacement.place(first, at: target, replacing: false)
        #expect(try String(contentsOf: target, encoding: .utf8) == "body")
        #expect(!FileManager.default.fileExists(atPath: first.path))
    }
}

/// Which destinations a download is renamed onto, and which are written directly.
@Suite("courier: replaceable destinations")
struct CLIReplaceableDestinationTests {
    @Test func regularFilesAndFreeNamesAreReplaceable() throws {
        let folder = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("file")
        try Data("x".utf8).write(to: file)
        let link = folder.appendingPathComponent("link")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: file)
        #expect(DownloadPlacement.isReplaceable(file))
        #expect(DownloadPlacement.isReplaceable(link))
        #expect(DownloadPlacement.isReplaceable(folder.appendingPathComponent("absent")))
    }

    /// `/dev/stdout`, `/dev/fd/1` and `/proc/self/fd/1` reach the output through `/proc`, even when it is a regular
    /// file (the test's own standard output may be one); devices are written, not replaced.
    @Test func outputsReachedThroughProcAndDevicesAreNot() throws {
        for path in ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1", "/dev/null"] {
            #expect(!DownloadPlacement.isReplaceable(URL(fileURLWithPath: path)), "\(path)")
        }
        let folder = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let toStdout = folder.appendingPathComponent("to-stdout")
        try FileManager.default.createSymbolicLink(atPath: toStdout.path, withDestinationPath: "/dev/stdout")
        #expect(!DownloadPlacement.isReplaceable(toStdout))
    }

    /// A regular file in `/dev/shm` (a tmpfs) is an ordinary file: `-C -` and placement by rename apply to it.
    @Test(.enabled(if: FileManager.default.isWritableFile(atPath: "/dev/shm")))
    func aRegularFileInDevShmIsReplaceable() throws {
        let file = URL(fileURLWithPath: "/dev/shm/courier-test-\(UUID().uuidString)")
        try Data("x".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(DownloadPlacement.isReplaceable(file))
    }
}

/// The run's private download folder goes away at the end (or on an interruption) even while a cancelled download
/// still removes its own file in it.
@Suite("courier: removing the run's folder")
struct CLIRunFolderRemovalTests {
    /// The retry itself, without a race: a removal that gives up twice (as `FileManager`'s does when an entry
    /// vanishes under it) is tried again until the folder is gone.
    @Test func aRemovalThatGivesUpIsTriedAgain() throws {
        let folder = try makeTemporaryDirectory()
        _ = FileManager.default.createFile(atPath: folder.appendingPathComponent("part").path, contents: Data([1]))
        var attempts = 0
        DownloadPlacement.removeFolder(folder) { url in
            attempts += 1
            if attempts <= 2 { throw CocoaError(.fileNoSuchFile) }
            try FileManager.default.removeItem(at: url)
        }
        #expect(attempts == 3)
        #expect(!FileManager.default.fileExists(atPath: folder.path))
    }

    /// (On a thread of its own: the removal waits between tries, which must not hold one of the test run's few
    /// shared threads.)
    @Test func aFolderWhoseFilesVanishMeanwhileIsStillRemoved() async throws {
        let remained = await onOwnThread { (try? Self.removeVanishingFolders()) ?? -1 }
        #expect(remained == 0)
    }

    private static func removeVanishingFolders() throws -> Int {
        var remained = 0
        for _ in 0..<10 {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                ".courier-test-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
            let names = (0..<400).map { "part-\($0)" }
            for name in names {
                let path = folder.appendingPathComponent(name).path
                _ = FileManager.default.createFile(atPath: path, contents: Data([1]))
            }
            // Another thread removes the files as a cancelled download removes its own.
            let remover = Thread {
                for name in names.reversed() { unlink(folder.appendingPathComponent(name).path) }
            }
            remover.start()
            DownloadPlacement.removeFolder(folder)
            var status = stat()
            if lstat(folder.path, &status) == 0 {
                remained += 1
                try? FileManager.default.removeItem(at: folder)
            }
        }
        return remained
    }
}

/// A regular file reached through `/proc` — what `-o /dev/stdout` names when the shell redirected the output to a
/// file — is written through the descriptor's file, never replaced by a rename (which would leave the shell's
/// descriptor writing to a file no longer in the folder, and the output in a new file with the sink's mode).
@Suite("courier: output written through /proc")
struct CLIOutputThroughProcTests {
    /// A file opened as a shell's `>` or `>>` would, and the `/proc/self/fd/N` and `/dev/fd/N` names of it.
    private func openedFile(containing text: String) throws -> (file: URL, descriptor: Int32) {
        let folder = try makeTemporaryDirectory()
        let file = folder.appendingPathComponent("redirected")
        try Data(text.utf8).write(to: file)
        let descriptor = open(file.path, O_WRONLY | O_APPEND | O_CLOEXEC)
        try #require(descriptor >= 0)
        return (file, descriptor)
    }

    private func inode(_ path: String) -> ino_t? {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_ino : nil
    }

    @Test func aDescriptorsFileIsNotReplaceable() throws {
        let (file, descriptor) = try openedFile(containing: "")
        defer {
            close(descriptor)
            try? FileManager.default.removeItem(at: file.deletingLastPathComponent())
        }
        for path in ["/proc/self/fd/\(descriptor)", "/dev/fd/\(descriptor)"] {
            #expect(!DownloadPlacement.isReplaceable(URL(fileURLWithPath: path)), "\(path)")
        }
    }

    @Test(arguments: ["/proc/self/fd/", "/dev/fd/"])
    func theSinkWritesIntoTheRedirectedFile(prefix: String) throws {
        let (file, descriptor) = try openedFile(containing: "kept;")
        defer {
            close(descriptor)
            try? FileManager.default.removeItem(at: file.deletingLastPathComponent())
        }
        let before = inode(file.path)
        let sink = try OutputSink(path: prefix + "\(descriptor)")
        #expect(sink.isDirect)
        try sink.write(Data("written".utf8))
        try sink.commit()
        // The same file (the shell's descriptor still names it), with what it had kept and the body after it.
        #expect(inode(file.path) == before)
        #expect(try String(contentsOf: file, encoding: .utf8) == "kept;written")
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: file.deletingLastPathComponent().path) == ["redirected"]
        )
    }

    /// The body and what the process writes to the same descriptor afterwards (`-w`, another URL's body) share one
    /// position: a file the shell opened with `>` (not appending) gets both, in order, neither over the other.
    @Test(arguments: ["/proc/self/fd/", "/dev/fd/"])
    func theBodyAndLaterWritesShareThePosition(prefix: String) throws {
        let folder = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("redirected")
        let descriptor = open(file.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        #expect(OutputSink.ownDescriptor(reachedBy: prefix + "\(descriptor)") == descriptor)
        let sink = try OutputSink(path: prefix + "\(descriptor)")
        try sink.write(Data("body".utf8))
        try sink.commit()
        #expect(write(descriptor, "+written", 8) == 8)
        #expect(try String(contentsOf: file, encoding: .utf8) == "body+written")
    }

    @Test func aFileThatIsNoDescriptorOfOursIsNotOne() throws {
        let folder = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        #expect(OutputSink.ownDescriptor(reachedBy: folder.appendingPathComponent("plain").path) == nil)
        #expect(OutputSink.ownDescriptor(reachedBy: "/dev/null") == nil)
        #expect(OutputSink.ownDescriptor(reachedBy: "/proc/self/fd/987654") == nil)
    }

    @Test func aFolderIsRefused() throws {
        let folder = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        #expect(throws: (any Error).self) { try OutputSink(path: folder.path) }
    }
}

/// What an interruption removes of a placement under way, and what it never touches.
@Suite("courier: placement cleanup on interruption")
struct CLIPlacementCleanupTests {
    /// Makes `url` through `cleanup` (as a claim or a copy is made), with `contents`.
    private func make(_ url: URL, _ contents: String = "", in cleanup: PlacementCleanup) throws {
        let (_, descriptor) = try cleanup.createTracked {
            let descriptor = open(url.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else { throw POSIXError(.EEXIST) }
            return (url, descriptor)
        }
        defer { close(descriptor) }
        _ = contents.utf8CString.withUnsafeBufferPointer { write(descriptor, $0.baseAddress, $0.count - 1) }
    }

    /// A claim named `name` in a new folder, made through a cleanup that an interruption then abandoned: the claim
    /// must be gone.
    private func abandonedClaim(_ name: String) throws -> (folder: URL, claim: URL, cleanup: PlacementCleanup) {
        let folder = try makeTemporaryDirectory()
        let claim = folder.appendingPathComponent(name)
        let cleanup = PlacementCleanup()
        try make(claim, in: cleanup)
        cleanup.abandon()
        #expect(!FileManager.default.fileExists(atPath: claim.path))
        return (folder, claim, cleanup)
    }

    @Test func aTrackedFileIsRemovedAndLaterOnesAreRefused() throws {
        let (folder, _, cleanup) = try abandonedClaim("claim")
        defer { try? FileManager.default.removeItem(at: folder) }
        let late = folder.appendingPathComponent("late")
        #expect(throws: (any Error).self) { try make(late, in: cleanup) }
        #expect(!FileManager.default.fileExists(atPath: late.path))
    }

    /// A failed placement removes only what is still its own: after an interruption removed a claim, the name may be
    /// another file's (another transfer of the run placed one there), and that file stays.
    @Test func aFailedPlacementLeavesANameTheInterruptionFreed() throws {
        let (folder, claim, cleanup) = try abandonedClaim("chosen.txt")
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data("another transfer's file".utf8).write(to: claim)
        cleanup.removeIfTracked(claim.path)
        #expect(try String(contentsOf: claim, encoding: .utf8) == "another transfer's file")

        let stillOurs = folder.appendingPathComponent("ours")
        let running = PlacementCleanup()
        try make(stillOurs, in: running)
        running.removeIfTracked(stillOurs.path)
        #expect(!FileManager.default.fileExists(atPath: stillOurs.path))
    }

    /// A file renamed into place is the user's: a later interruption leaves it; one that came first stops a rename
    /// onto a claim it removed, but not a complete download's own rename into place.
    @Test func aRenamedFileIsNeverRemoved() throws {
        let folder = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let copy = folder.appendingPathComponent(".chosen.courier-x")
        let target = folder.appendingPathComponent("chosen")
        let cleanup = PlacementCleanup()
        try make(target, in: cleanup)  // a claim
        try make(copy, "complete", in: cleanup)
        #expect(cleanup.rename(copy.path, to: target.path) == nil)
        cleanup.abandon()
        #expect(try String(contentsOf: target, encoding: .utf8) == "complete")

        let claimed = folder.appendingPathComponent("claimed")
        let later = PlacementCleanup()
        try make(claimed, in: later)
        later.abandon()
        let another = folder.appendingPathComponent("another")
        try Data("x".utf8).write(to: another)
        #expect(later.rename(another.path, to: claimed.path) == ECANCELED)
        #expect(FileManager.default.fileExists(atPath: another.path))
        #expect(!FileManager.default.fileExists(atPath: claimed.path))
        let moved = folder.appendingPathComponent("moved")
        #expect(later.rename(another.path, to: moved.path) == nil)
        #expect(try String(contentsOf: moved, encoding: .utf8) == "x")
    }
}
