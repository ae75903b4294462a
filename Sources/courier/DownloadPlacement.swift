import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where download tasks write, and how a finished download becomes the user's file.
///
/// Download tasks of a run write into a private folder (mode 0700, made by `mkdtemp`) beside the output file, so
/// that the finished file is put in place by one `rename(2)` on the same file system, however large it is. With
/// `-C -` the folder is `.courier-partials` (kept between runs, checked by Courier to be private to the user) and
/// `FILE.courier-partial` holds the resume data; otherwise the folder is removed when the run ends, so a failed or
/// interrupted download leaves nothing behind.
enum DownloadPlacement {
    /// The folder kept between runs for `-C -`.
    static let partialsFolderName = ".courier-partials"

    /// A new private folder in `directory` for this run's downloads.
    static func makeRunFolder(in directory: URL) throws -> URL {
        var template = Array(directory.appendingPathComponent(".courier-XXXXXX").path.utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer in mkdtemp(buffer.baseAddress!) }
        guard made != nil else { throw OutputSink.posixError(errno, path: directory.path) }
        let path = String(decoding: template.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return URL(fileURLWithPath: path, isDirectory: true)
    }

    /// Removes `folder` and what is in it.
    ///
    /// A download being cancelled may still remove or close its file in the folder meanwhile, and `FileManager`
    /// gives up on the whole folder when an entry vanishes under it: it tries again for up to a second.
    /// `remove` is `FileManager`'s removal; tests pass one that fails as it does when an entry vanishes.
    static func removeFolder(
        _ folder: URL, remove: (URL) throws -> Void = { try FileManager.default.removeItem(at: $0) }
    ) {
        for _ in 0..<50 {
            try? remove(folder)
            var status = stat()
            if lstat(folder.path, &status) != 0 { return }
            usleep(20_000)
        }
    }

    /// Removes `folder` when nothing is left in it.
    static func removeFolderIfEmpty(_ folder: URL) {
        rmdir(folder.path)
    }

    /// Moves the complete download at `location` over `destination` (a symbolic link there is followed, so the
    /// link stays and its target is replaced): synced to disk first, given the mode the destination had or a new
    /// file gets, then renamed. The destination is never open half-written.
    ///
    /// With `replacing` false an existing file is left alone and the placement fails with `EEXIST` (`-O -J`: the
    /// server chose the name). A symbolic link at the name counts as an existing entry and is not followed, dangling
    /// or not, as curl's `O_CREAT | O_EXCL` open refuses it: the new file is never created wherever a link points.
    /// `link` is link(2) and `renameNoReplace` renameat2(2) with `RENAME_NOREPLACE`; tests pass ones that fail as on
    /// a file system without them. Files made beside the destination meanwhile (a claim, a
    /// copy across file systems) are tracked by `cleanup`, which removes them when the run is interrupted.
    static func place(
        _ location: URL,
        at destination: URL,
        replacing: Bool = true,
        cleanup: PlacementCleanup = PlacementCleanup(),
        link: (String, String) -> Int32 = systemLink,
        renameNoReplace: (String, String) -> Int32 = systemRenameNoReplace
    ) throws -> URL {
        // Without replacing, only the folder is resolved: link(2), renameat2's `RENAME_NOREPLACE` and an
        // `O_EXCL` open all fail with `EEXIST` on a link at the name itself, where following it would create the
        // file at the link's (dangling) target.
        let target =
            replacing
            ? try OutputSink.resolveDestination(destination)
            : try OutputSink.resolveFolder(of: destination)
        let descriptor = open(location.path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { throw OutputSink.posixError(errno, path: location.path) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw OutputSink.posixError(errno, path: location.path) }
        let mode = OutputSink.finalMode(for: target)
        fchmod(descriptor, mode)
        if !replacing {
            // link(2) puts the file in place only where nothing is: no window for a race with another writer.
            if link(location.path, target.path) == 0 {
                unlink(location.path)
                return target
            }
            let failure = errno
            guard Self.hasNoHardLinks(failure) else { throw OutputSink.posixError(failure, path: target.path) }
            // A file system without hard links (FAT, some network and FUSE ones): renameat2's RENAME_NOREPLACE is
            // as safe, where the file system has it.
            if renameNoReplace(location.path, target.path) == 0 { return target }
            let renameFailure = errno
            guard Self.cannotRenameWithoutReplacing(renameFailure) else {
                throw OutputSink.posixError(renameFailure, path: target.path)
            }
            // Neither: the name is claimed by creating it exclusively, then the complete file is renamed over that
            // claim. An interruption meanwhile removes the claim (`cleanup`) instead of leaving an empty file.
            let (_, claim) = try cleanup.createTracked {
                let claim = open(target.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
                guard claim >= 0 else { throw OutputSink.posixError(errno, path: target.path) }
                return (target, claim)
            }
            close(claim)
            do {
                try put(location, descriptor: descriptor, at: target, mode: mode, cleanup: cleanup)
            } catch {
                cleanup.removeIfTracked(target.path)
                throw error
            }
            return target
        }
        try put(location, descriptor: descriptor, at: target, mode: mode, cleanup: cleanup)
        return target
    }

    private static func systemLink(_ existing: String, _ new: String) -> Int32 {
        link(existing, new)
    }

    /// renameat2(2) with `RENAME_NOREPLACE`, looked up at run time (the C library's module does not declare it);
    /// `ENOSYS` where the C library lacks it.
    static func systemRenameNoReplace(_ existing: String, _ new: String) -> Int32 {
        guard let renameat2 = renameAt2 else {
            errno = ENOSYS
            return -1
        }
        return renameat2(AT_FDCWD, existing, AT_FDCWD, new, renameNoReplaceFlag)
    }

    private typealias RenameAt2 =
        @convention(c) (
            Int32, UnsafePointer<CChar>, Int32, UnsafePointer<CChar>, UInt32
        ) -> Int32

    /// `RENAME_NOREPLACE` of `<linux/fs.h>`.
    private static let renameNoReplaceFlag: UInt32 = 1

    private static let renameAt2: RenameAt2? = {
        #if os(Linux)
            return dlsym(nil, "renameat2").map { unsafeBitCast($0, to: RenameAt2.self) }
        #else
            return nil
        #endif
    }()

    /// Whether renameat2(2) failed because the flag or the call is not supported here (or the two names are on
    /// different file systems), rather than because of the target.
    static func cannotRenameWithoutReplacing(_ error: Int32) -> Bool {
        [EINVAL, ENOSYS, EOPNOTSUPP, ENOTSUP, EXDEV].contains(error)
    }

    /// Renames the synced file at `location` (open as `descriptor`) to `target`; across file systems (a bind
    /// mount), a complete copy beside the target is renamed instead, tracked by `cleanup` while it is made.
    private static func put(
        _ location: URL, descriptor: Int32, at target: URL, mode: mode_t, cleanup: PlacementCleanup
    ) throws {
        switch cleanup.rename(location.path, to: target.path) {
        case nil: return
        case EXDEV?: break
        case let failure?: throw OutputSink.posixError(failure, path: target.path)
        }
        let (temporary, output) = try cleanup.createTracked { try OutputSink.createTemporary(beside: target) }
        // Owned by the handle from here on, whatever fails next.
        let sink = FileHandle(fileDescriptor: output, closeOnDealloc: true)
        do {
            let source = FileHandle(fileDescriptor: descriptor, closeOnDealloc: false)
            while let chunk = try source.read(upToCount: 1 << 20), !chunk.isEmpty {
                try sink.write(contentsOf: chunk)
            }
            try sink.synchronize()
            fchmod(output, mode)
            try sink.close()
            if let failure = cleanup.rename(temporary.path, to: target.path) {
                throw OutputSink.posixError(failure, path: target.path)
            }
        } catch {
            cleanup.removeIfTracked(temporary.path)
            throw error
        }
    }

    /// Whether link(2) failed because the file system cannot make hard links, rather than because of the target.
    static func hasNoHardLinks(_ error: Int32) -> Bool {
        [EPERM, EOPNOTSUPP, ENOTSUP, EMLINK, ENOSYS, EXDEV].contains(error)
    }

    /// Whether a download may be placed at `url` by a rename: a regular file or nothing there. A device, a FIFO, a
    /// socket, and anything reached through `/proc` (`/dev/stdout` and `/dev/fd/N` are links to `/proc/self/fd/N`,
    /// which name the file a shell redirected the output to: a rename would replace that file while the shell's
    /// descriptor keeps writing to the old one) are written directly instead. A regular file elsewhere under `/dev`
    /// (`/dev/shm`) is an ordinary file.
    static func isReplaceable(_ url: URL) -> Bool {
        guard case .path(let path) = followLinks(from: url) else { return false }
        var info = stat()
        guard stat(path, &info) == 0 else { return true }
        return (info.st_mode & S_IFMT) == S_IFREG
    }

    /// Where a path leads when its symbolic links are followed.
    enum LinkEnd: Equatable {
        /// An entry inside `/proc` (its folder, with links resolved, and its name): `/proc`'s links lead to the file
        /// behind them, which is not what the path names.
        case proc(folder: String, name: String)
        /// A path outside `/proc`, after the last link.
        case path(String)
    }

    /// Follows `url`'s links one at a time, checking the folder each lives in: resolving the whole path at once
    /// would step through `/proc`'s links to the file behind them and hide that `/proc` was on the way.
    static func followLinks(from url: URL) -> LinkEnd {
        var path = url.standardizedFileURL.path
        for _ in 0..<40 {
            let current = URL(fileURLWithPath: path)
            let folder = current.deletingLastPathComponent().resolvingSymlinksInPath().path
            if folder == "/proc" || folder.hasPrefix("/proc/") {
                return .proc(folder: folder, name: current.lastPathComponent)
            }
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: path) else { break }
            path = target.hasPrefix("/") ? target : URL(fileURLWithPath: folder).appendingPathComponent(target).path
        }
        return .path(path)
    }

    /// A plain file name for `-O`: the last path component of the server's suggestion, without control or
    /// bidirectional formatting characters (``isUnsafeInName(_:)``), not hidden (a leading dot becomes `_`),
    /// `index.html` when nothing is left, and at most 200 bytes of UTF-8: file systems limit a name to 255 bytes
    /// (`NAME_MAX`), not characters, and the tool's own names beside the file (`.NAME.courier-XXXXXX`,
    /// `NAME.courier-partial`) need room too.
    static func safeFileName(_ suggested: String?) -> String {
        let last = (suggested ?? "").split(whereSeparator: { $0 == "/" || $0 == "\\" }).last.map(String.init) ?? ""
        var name = String(last.unicodeScalars.filter { !Self.isUnsafeInName($0) }.map(Character.init))
        name = name.trimmingCharacters(in: .whitespaces)
        if name.isEmpty || name == "." || name == ".." || name == "Unknown" { return "index.html" }
        if name.hasPrefix(".") { name = "_" + name.dropFirst() }
        name = Self.prefix(of: name, maximumBytes: 200)
        // Never the name of the tool's own records beside a file (checked after shortening, which could restore it).
        if name.hasSuffix(PartialRecord.suffix) { name = Self.prefix(of: name, maximumBytes: 199) + "_" }
        return name
    }

    /// Whether `scalar` has no place in a file name someone else chose: a control character — C0, DEL, and C1
    /// (U+0080–U+009F, which `Content-Disposition`'s `filename*` can carry and terminals obey as `ESC [` and the
    /// like when the name is shown) — or a bidirectional formatting character: `invoice`, U+202E, `fdp.exe`
    /// reads as `invoiceexe.pdf`.
    static func isUnsafeInName(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F...0x9F, 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }

    /// The longest start of `name` that fits in `maximumBytes` bytes of UTF-8, cut between characters (between
    /// scalars when the first character alone is longer), never inside one's encoding.
    static func prefix(of name: String, maximumBytes: Int) -> String {
        guard name.utf8.count > maximumBytes else { return name }
        var result = ""
        var bytes = 0
        for character in name {
            let size = character.utf8.count
            guard bytes + size <= maximumBytes else { break }
            result.append(character)
            bytes += size
        }
        guard result.isEmpty else { return result }
        var scalars = String.UnicodeScalarView()
        for scalar in name.unicodeScalars {
            let size = String(scalar).utf8.count
            guard bytes + size <= maximumBytes else { break }
            scalars.append(scalar)
            bytes += size
        }
        return String(scalars)
    }
}
