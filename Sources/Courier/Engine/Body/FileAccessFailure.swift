import CourierHTTP

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The error for a failed `stat(2)` or `open(2)` of a file Courier reads (a `file:` URL, an upload's file), by
/// `errno`: a missing file (or a path through a non-directory) is `fileDoesNotExist`, a refused one (`EACCES`,
/// `EPERM`, also by a folder above it) `noPermissionsToReadFile`, anything else `cannotOpenFile`.
enum FileAccessFailure {
    /// - Parameters:
    ///   - code: The `errno` of the failed call.
    ///   - file: How the message names the file, e.g. "the file to upload /tmp/x".
    static func error(errno code: Int32, file: String) -> TransferError {
        switch code {
        case ENOENT, ENOTDIR: return .fileDoesNotExist("\(file) does not exist")
        case EACCES, EPERM: return .noPermissionsToReadFile("no permission to read \(file)")
        default: return .cannotOpenFile("cannot open \(file): \(String(cString: strerror(code)))")
        }
    }
}
