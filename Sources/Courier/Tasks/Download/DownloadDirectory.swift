import CourierHTTP
import CourierStore
import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The folder download tasks write into, and the rules that keep it private.
///
/// Downloads and the partial files kept for resume data must not be readable or replaceable by another local
/// user. So the folder is created mode 0700 and, when it already exists, used only if it is a real directory (not
/// a symbolic link) owned by the current user and not writable by group or others; files in it are created
/// `O_EXCL | O_NOFOLLOW`, mode 0600, and a partial file is reopened only if it is a regular file owned by the
/// current user. Every function here does blocking file-system work: call it off the event loops.
package enum DownloadDirectory {
    /// How long a partial file kept for resume data may stay unused before ``sweep(_:now:)`` deletes it. Darwin's
    /// temporary folder is purged by the system; Courier's cache folder must purge itself.
    static let partialFileLifetime: TimeInterval = 7 * 24 * 60 * 60
    /// Darwin's name prefix and suffix for download files, which the sweep looks for.
    static let fileNamePrefix = "CFNetworkDownload_"
    static let fileNameSuffix = ".tmp"

    /// Whether `name` is one the library gives its download files (`CFNetworkDownload_*.tmp`): the only names it
    /// continues from resume data, sweeps, or lets courierd and the `courier` command adopt or delete.
    package static func isDownloadFileName(_ name: String) -> Bool {
        name.hasPrefix(fileNamePrefix) && name.hasSuffix(fileNameSuffix)
            && name.count > fileNamePrefix.count + fileNameSuffix.count
    }

    /// The default folder of this process, read from its environment once.
    static let defaultFolder = defaultLocation()

    /// The default folder: `$XDG_CACHE_HOME/courier/downloads`, else `$HOME/.cache/courier/downloads`, else (no
    /// home) `courier-<uid>` in the temporary directory. A cache folder, not `XDG_RUNTIME_DIR`: that is usually
    /// memory-backed, and partial files of large downloads must outlive a logout.
    static func defaultLocation(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        if let cache = environment["XDG_CACHE_HOME"], cache.hasPrefix("/") {
            return URL(fileURLWithPath: cache, isDirectory: true).appendingPathComponent("courier/downloads")
        }
        if let home = environment["HOME"], home.hasPrefix("/"), home != "/" {
            return URL(fileURLWithPath: home, isDirectory: true).appendingPathComponent(".cache/courier/downloads")
        }
        let temporary = environment["TMPDIR"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "/tmp"
        return URL(fileURLWithPath: temporary, isDirectory: true).appendingPathComponent("courier-\(geteuid())")
    }

    /// Makes sure `directory` exists and is private (see ``PrivateFolder/prepare(_:purpose:hint:)``).
    static func prepare(_ directory: URL) throws(TransferError) {
        try PrivateFolder.prepare(
            directory, purpose: "download folder", hint: "(choose another folder with courierDownloadDirectory)")
    }

    static func privacyProblem(of path: String) -> String? {
        PrivateFolder.privacyProblem(of: path)
    }

    /// Creates a new, empty file at `url` for writing: `O_EXCL | O_NOFOLLOW`, mode 0600.
    static func createFile(at url: URL) throws(TransferError) -> FileHandle {
        let descriptor = open(url.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw .cannotCreateFile("cannot create the download file \(url.path): \(describe(errno))")
        }
        ActiveFiles.shared.insert(url.path)
        return FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
    }

    /// Opens an existing partial file for writing, refusing a symbolic link, anything but a regular file, and a file
    /// another user owns (it could have been planted to read or corrupt a resumed download).
    ///
    /// The open is non-blocking: a FIFO put in the file's place after it was checked would otherwise hold the
    /// file's queue until some reader opened it (forever); it fails at once with `ENXIO`, or opens and is refused as
    /// not a regular file. The descriptor is made blocking again for the writes.
    static func openPartialFile(at url: URL) throws(TransferError) -> FileHandle {
        let descriptor = open(url.path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw .cannotOpenFile("cannot open the partial download \(url.lastPathComponent): \(describe(errno))")
        }
        var info = stat()
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_uid == geteuid() else {
            close(descriptor)
            throw .cannotOpenFile("the partial download \(url.lastPathComponent) is not a regular file of this user")
        }
        // Another process resuming the same resume data (two runs of `courier get -C -`, two apps on one folder)
        // would cut the file back and write at its own offset, and the first to finish delivered a file with a hole.
        // `claim` keeps tasks of one process apart; this advisory lock, held by the open file until it closes,
        // keeps processes apart.
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            close(descriptor)
            throw .cannotOpenFile("the partial download \(url.lastPathComponent) is being resumed by another process")
        }
        let flags = fcntl(descriptor, F_GETFL)
        guard flags >= 0, fcntl(descriptor, F_SETFL, flags & ~O_NONBLOCK) == 0 else {
            let error = errno
            close(descriptor)
            throw .cannotOpenFile("cannot open the partial download \(url.lastPathComponent): \(describe(error))")
        }
        ActiveFiles.shared.insert(url.path)
        return FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
    }

    /// The size of the partial file at `url`, if it is a regular file (not a symbolic link) owned by the current
    /// user.
    static func partialFileSize(at url: URL) -> Int64? {
        var info = stat()
        guard lstat(url.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_uid == geteuid() else {
            return nil
        }
        return Int64(info.st_size)
    }

    /// Notes that a file is no longer being written (closed or removed), so a sweep may consider it.
    static func release(_ url: URL) {
        ActiveFiles.shared.remove(url.path)
    }

    /// Claims a partial file for a task about to resume it: `false` when another task of this process is already
    /// using it (two resumes of the same resume data would cut and write the same file at once). A claimed file is
    /// never swept; ``release(_:)`` gives it up.
    static func claim(_ url: URL) -> Bool {
        ActiveFiles.shared.claim(url.path)
    }

    // MARK: - Sweeping

    /// Deletes download files in `directory` not modified for ``partialFileLifetime`` and not in use by this
    /// process: partial files kept for resume data that was never used. Only Courier's own file names, only regular
    /// files owned by the current user, never through a symbolic link, and only in a private folder.
    ///
    /// - Returns: The names of the deleted files.
    @discardableResult
    static func sweep(_ directory: URL, now: Date = Date()) -> [String] {
        guard privacyProblem(of: directory.path) == nil,
            let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path)
        else { return [] }
        let cutoff = now.timeIntervalSince1970 - partialFileLifetime
        var deleted: [String] = []
        for name in names where isDownloadFileName(name) {
            let path = directory.appendingPathComponent(name, isDirectory: false).path
            guard !ActiveFiles.shared.contains(path) else { continue }
            var info = stat()
            guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_uid == geteuid(),
                Double(info.st_mtim.tv_sec) < cutoff
            else { continue }
            if unlink(path) == 0 { deleted.append(name) }
        }
        return deleted
    }

    /// Sweeps `directory` on a background queue, at most once an hour per folder in this process (sessions may be
    /// created often; the folder only needs looking at now and then).
    static func sweepInBackground(_ directory: URL) {
        let now = Date()
        let due = lastSweeps.withLockedValue { sweeps in
            if let last = sweeps[directory.path], now.timeIntervalSince(last) < 60 * 60 { return false }
            sweeps[directory.path] = now
            return true
        }
        guard due else { return }
        DispatchQueue.global(qos: .utility).async { sweep(directory, now: now) }
    }

    private static let lastSweeps = NIOLockedValueBox<[String: Date]>([:])

    // MARK: - Helpers

    private static func describe(_ code: Int32) -> String {
        PrivateFolder.describe(code)
    }

    /// The files this process is writing, which a sweep must leave alone however old their last write.
    private final class ActiveFiles: Sendable {
        static let shared = ActiveFiles()
        private let paths = NIOLockedValueBox<Set<String>>([])

        func insert(_ path: String) { paths.withLockedValue { _ = $0.insert(path) } }
        func claim(_ path: String) -> Bool { paths.withLockedValue { $0.insert(path).inserted } }
        func remove(_ path: String) { paths.withLockedValue { _ = $0.remove(path) } }
        func contains(_ path: String) -> Bool { paths.withLockedValue { $0.contains(path) } }
    }
}
