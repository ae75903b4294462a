import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where `courier get` writes the body: standard output, or a file that appears only when the transfer
/// succeeded.
///
/// For a regular file (or a new one) the body goes to a new temporary file beside it (`O_EXCL | O_NOFOLLOW`, mode
/// 0600, so nobody else can read it while it is written), which `rename(2)` puts in place at the end: an existing
/// file is replaced in one step, and left untouched, byte for byte, when the transfer fails or the tool is
/// interrupted. A destination that is a symbolic link is resolved first, so the link stays and its target is
/// replaced (as curl writes through links). A destination that exists but is not a regular file — `/dev/null`, a
/// FIFO, a terminal — or that is reached through `/proc` (`/dev/stdout`) is written directly, as curl does: it cannot
/// be replaced, and must not be (``DownloadPlacement/isReplaceable(_:)`` decides, for downloads too).
final class OutputSink: Sendable {
    private enum State {
        case writing
        /// The temporary file is being synced and renamed into place.
        case committing
        case committed
        case discarded
    }

    private let handle: FileHandle
    private let destination: URL?
    private let temporary: URL?
    /// The mode the finished file gets, decided before any transfer thread runs (reading the umask changes it
    /// for a moment).
    private let finalMode: mode_t
    private let state = NIOLockedValueBox(State.writing)

    /// - Parameters:
    ///   - path: The file, or `nil` or `-` for standard output.
    ///   - mode: The finished file's mode; by default the mode an existing file had, or 0666 less the umask for a
    ///     new one. (The cookie jar, which holds secrets, is 0600.)
    init(path: String?, mode: mode_t? = nil) throws {
        guard let path, path != "-" else {
            handle = FileHandle.standardOutput
            destination = nil
            temporary = nil
            finalMode = 0
            return
        }
        let requested = URL(fileURLWithPath: path)
        try Self.refuseForeignEntries(on: requested)
        // The same test as a download's: a regular file reached through `/proc` (`/dev/stdout` when the shell
        // redirected the output to a file) is written, not replaced; a rename would swap the file the shell's
        // descriptor still writes to for a new one.
        if !DownloadPlacement.isReplaceable(requested) {
            var info = stat()
            if stat(requested.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
                throw Self.posixError(EISDIR, path: requested.path)
            }
            // One of this process's own descriptors (`/dev/stdout`, `/dev/fd/N`, `/proc/self/fd/N`) is duplicated,
            // so that the body and what the tool writes to standard output itself (`-w`, another URL's body) share
            // one position in the file. Anything else is opened appending: a file the shell opened with `>>` keeps
            // what it had; devices and FIFOs ignore the flag.
            let descriptor =
                Self.ownDescriptor(reachedBy: requested.path).map { fcntl($0, F_DUPFD_CLOEXEC, 0) }
                ?? open(requested.path, O_WRONLY | O_APPEND | O_CLOEXEC)
            guard descriptor >= 0 else { throw Self.posixError(errno, path: requested.path) }
            handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
            destination = nil
            temporary = nil
            finalMode = 0
            return
        }
        let destination = try Self.resolveDestination(requested)
        let (temporary, descriptor) = try Self.createTemporary(beside: destination)
        handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        self.destination = destination
        self.temporary = temporary
        self.finalMode = mode ?? Self.finalMode(for: destination)
    }

    /// Whether bytes go straight to their destination (standard output, a device, a FIFO): they cannot be taken
    /// back, so a transfer that wrote some must not be retried.
    var isDirect: Bool { temporary == nil }

    func write(_ data: Data) throws {
        try handle.write(contentsOf: data)
    }

    /// Makes the file visible under its name: the complete temporary file is renamed over the destination.
    func commit() throws {
        guard let destination, let temporary else { return }
        let proceed = state.withLockedValue { state in
            guard case .writing = state else { return false }
            state = .committing
            return true
        }
        guard proceed else { return }
        do {
            try handle.synchronize()
            // The file gets the mode the destination had, or the one a new file gets (0666 less the umask), not the
            // temporary's 0600.
            fchmod(handle.fileDescriptor, finalMode)
            try handle.close()
            guard rename(temporary.path, destination.path) == 0 else {
                throw Self.posixError(errno, path: destination.path)
            }
            state.withLockedValue { $0 = .committed }
        } catch {
            unlink(temporary.path)
            state.withLockedValue { $0 = .discarded }
            throw error
        }
    }

    /// Removes the temporary file; the destination is never touched.
    func discard() {
        guard let temporary else { return }
        let proceed = state.withLockedValue { state in
            guard case .writing = state else { return false }
            state = .discarded
            return true
        }
        guard proceed else { return }
        try? handle.close()
        unlink(temporary.path)
    }

    /// The tool is being interrupted and is about to exit: removes the temporary file unless it was already renamed
    /// into place, also while a commit is under way (the process ends before the commit could go on). Does not
    /// touch the file handle, which a transfer thread may be writing to.
    func abandon() {
        guard let temporary else { return }
        let renamed = state.withLockedValue { state in
            if case .committed = state { return true }
            state = .discarded
            return false
        }
        if !renamed { unlink(temporary.path) }
    }

    // MARK: - Helpers

    /// The descriptor of this process that `path` names through `/proc` (`/dev/stdout` → `/proc/self/fd/1`,
    /// `/dev/fd/N`, `/proc/self/fd/N`, `/proc/PID/fd/N` with this process's id), if it does and it is open.
    static func ownDescriptor(reachedBy path: String) -> Int32? {
        guard case .proc(let folder, let name) = DownloadPlacement.followLinks(from: URL(fileURLWithPath: path)),
            folder == "/proc/self/fd" || folder == "/proc/\(getpid())/fd",
            let number = Int32(name), fcntl(number, F_GETFD) != -1
        else { return nil }
        return number
    }

    /// A new file `.NAME.courier-XXXXXX` in the destination's folder, created exclusively.
    static func createTemporary(beside destination: URL) throws -> (URL, Int32) {
        let folder = destination.deletingLastPathComponent()
        for _ in 0..<16 {
            let suffix = String(UInt32.random(in: 0...UInt32.max), radix: 36)
            let candidate = folder.appendingPathComponent(".\(destination.lastPathComponent).courier-\(suffix)")
            let descriptor = open(candidate.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            if descriptor >= 0 { return (candidate, descriptor) }
            if errno != EEXIST { throw posixError(errno, path: candidate.path) }
        }
        throw posixError(EEXIST, path: folder.path)
    }

    static func finalMode(for destination: URL) -> mode_t {
        var info = stat()
        if stat(destination.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG {
            // The permission bits only: a set-user-ID or set-group-ID bit must not pass to new content (a write
            // into the file, as curl's, has the kernel clear them).
            return info.st_mode & 0o777
        }
        return 0o666 & ~processUmask
    }

    /// The process's umask, read once (reading it sets it for a moment, which two transfers finishing at once on
    /// different threads must not do: one of them could leave it 0). `GetCommand` reads it before any transfer.
    static let processUmask: mode_t = {
        let mask = umask(0o077)
        umask(mask)
        return mask
    }()

    /// The file a destination path names: a symbolic link is followed (the link stays and its target is written,
    /// as curl writes through links) only when it belongs to the user or to root, as the kernel's
    /// `protected_symlinks` would insist for `open(2)`; a link another user planted (in `/tmp`, say) is refused.
    static func resolveDestination(_ url: URL) throws -> URL {
        try refuseForeignEntries(on: url)
        var info = stat()
        guard lstat(url.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFLNK else {
            // Not a link (or nothing there yet): only the folder is resolved. A link planted after the check above is
            // not followed, then: rename(2) replaces a link instead of writing through it.
            return url.deletingLastPathComponent().resolvingSymlinksInPath()
                .appendingPathComponent(url.lastPathComponent)
        }
        return url.resolvingSymlinksInPath()
    }

    /// `url` with its folder resolved and its last component kept as it is, a symbolic link there included: for a
    /// file that must be new (`-O -J`), whose name must not be followed.
    static func resolveFolder(of url: URL) throws -> URL {
        try refuseForeignEntries(on: url)
        return url.deletingLastPathComponent().resolvingSymlinksInPath().appendingPathComponent(url.lastPathComponent)
    }

    /// Refuses a destination another local user could have planted, in a shared folder such as `/tmp`: every
    /// symbolic link on the way, and a FIFO or socket at its end, must belong to the user or to root. The kernel's
    /// `protected_symlinks` and `protected_fifos` would insist on much the same, but they cannot: the links are
    /// followed here, not by `open(2)`, and a FIFO is opened without `O_CREAT`. A body (or a cookie jar) written into
    /// another user's FIFO, or through their link to one of this process's descriptors, would be theirs.
    static func refuseForeignEntries(on url: URL) throws {
        var path = url.standardizedFileURL.path
        for _ in 0..<40 {
            var info = stat()
            guard lstat(path, &info) == 0 else { return }
            let trusted = info.st_uid == geteuid() || info.st_uid == 0
            switch info.st_mode & S_IFMT {
            case S_IFLNK:
                guard trusted else { throw posixError(EPERM, path: path + " (a symbolic link another user owns)") }
                guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: path) else { return }
                path =
                    target.hasPrefix("/")
                    ? target
                    : URL(fileURLWithPath: path).deletingLastPathComponent().appendingPathComponent(target).path
            case S_IFIFO, S_IFSOCK:
                guard trusted else { throw posixError(EPERM, path: path + " (a FIFO or socket another user owns)") }
                return
            default:
                return
            }
        }
    }

    static func posixError(_ code: Int32, path: String) -> any Error {
        NSError(
            domain: NSPOSIXErrorDomain,
            code: Int(code),
            userInfo: [NSLocalizedDescriptionKey: "\(path): \(String(cString: strerror(code)))"]
        )
    }
}
