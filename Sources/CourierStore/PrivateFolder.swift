import CourierHTTP
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Folders only the current user can write, and files replaced in them without ever being seen half-written.
///
/// Downloads, partial files and stored credentials must not be readable or replaceable by another local user. A
/// folder is created mode 0700 and, when it already exists, used only if it is a real directory (not a symbolic
/// link) owned by the current user and not writable by group or others. Every function here does blocking
/// file-system work: call it off the event loops.
package enum PrivateFolder {
    /// Makes sure `directory` exists and is private: creates it (and missing parents) with mode 0700, or checks an
    /// existing one. `purpose` names the folder in error messages ("download folder"); `hint` tells the user what
    /// to do instead.
    ///
    /// - Throws: `cannotCreateFile` when the folder cannot be created, or exists but is a symbolic link, not a
    ///   directory, owned by another user, or writable by group or others.
    package static func prepare(_ directory: URL, purpose: String, hint: String) throws(TransferError) {
        let path = directory.path
        if mkdir(path, 0o700) != 0 {
            let error = errno
            if error == ENOENT {
                try createParents(of: directory, purpose: purpose)
                if mkdir(path, 0o700) != 0 && errno != EEXIST {
                    throw .cannotCreateFile("cannot create the \(purpose) \(path): \(describe(errno))")
                }
            } else if error != EEXIST {
                throw .cannotCreateFile("cannot create the \(purpose) \(path): \(describe(error))")
            }
        }
        if let problem = privacyProblem(of: path) {
            throw .cannotCreateFile("the \(purpose) \(path) \(problem); Courier will not write there \(hint)")
        }
    }

    /// Why a folder is not private, or `nil` when it is: a real directory owned by the current user that neither
    /// group nor others can write.
    package static func privacyProblem(of path: String) -> String? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return "cannot be examined: \(describe(errno))" }
        if (info.st_mode & S_IFMT) == S_IFLNK { return "is a symbolic link" }
        if (info.st_mode & S_IFMT) != S_IFDIR { return "is not a folder" }
        if info.st_uid != geteuid() { return "belongs to another user (uid \(info.st_uid))" }
        if info.st_mode & (S_IWGRP | S_IWOTH) != 0 {
            return "can be written by other users (mode \(String(info.st_mode & 0o7777, radix: 8)))"
        }
        return nil
    }

    /// Replaces the file at `url` with `data`: the bytes go to a new temporary file beside it (`O_EXCL`, mode
    /// 0600), are flushed to disk, and the temporary file is renamed over `url`, so a reader sees the old file or
    /// the new one, never a mix, and a crash leaves at most a stray temporary file. The folder must be private
    /// (see ``prepare(_:purpose:hint:)``).
    package static func replaceFile(at url: URL, with data: Data) throws(TransferError) {
        let temporary = url.deletingLastPathComponent()
            .appendingPathComponent(".\(url.lastPathComponent).\(UInt64.random(in: 0...UInt64.max)).tmp")
        let descriptor = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw .cannotCreateFile("cannot create \(temporary.path): \(describe(errno))")
        }
        var written = 0
        let failure: Int32? = data.withUnsafeBytes { bytes -> Int32? in
            while written < bytes.count {
                let result = write(descriptor, bytes.baseAddress! + written, bytes.count - written)
                if result < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                written += result
            }
            return fsync(descriptor) == 0 ? nil : errno
        }
        close(descriptor)
        if let failure {
            unlink(temporary.path)
            throw .cannotWriteToFile("cannot write \(temporary.path): \(describe(failure))")
        }
        guard rename(temporary.path, url.path) == 0 else {
            let error = errno
            unlink(temporary.path)
            throw .cannotWriteToFile("cannot replace \(url.path): \(describe(error))")
        }
    }

    private static func createParents(of directory: URL, purpose: String) throws(TransferError) {
        let parent = directory.deletingLastPathComponent()
        do {
            try FileManager.default.createDirectory(
                at: parent,
                withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700]
            )
        } catch {
            throw .cannotCreateFile("cannot create the \(purpose) \(parent.path): \(error)")
        }
    }

    package static func describe(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}
