import CourierHTTP

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Opens a file Courier reads (a `file:` URL, an upload's file) only if it is a regular file. The open does not
/// block (a FIFO would wait for a writer, on a thread that cancelling cannot free), and the type is checked on the
/// open file, not on the path before (which another process can replace in between). The descriptor it returns
/// blocks again.
enum RegularFileOpening {
    /// - Parameters:
    ///   - path: The path, as a C string.
    ///   - file: How messages name the file, e.g. "the file to upload /tmp/x".
    ///   - directoryError: The error for a directory, which callers report as Darwin does for them.
    /// - Returns: The open descriptor, and the file's status.
    static func open(
        _ path: UnsafePointer<CChar>, file: String, directoryError: () -> TransferError
    ) throws(TransferError) -> (descriptor: Int32, status: stat) {
        #if canImport(Glibc)
            let descriptor = Glibc.open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        #else
            let descriptor = Darwin.open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        #endif
        guard descriptor >= 0 else { throw FileAccessFailure.error(errno: errno, file: file) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let code = errno
            close(descriptor)
            throw .cannotOpenFile("cannot read the status of \(file): \(String(cString: strerror(code)))")
        }
        switch status.st_mode & S_IFMT {
        case S_IFREG:
            _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK)
            return (descriptor, status)
        case S_IFDIR:
            close(descriptor)
            throw directoryError()
        default:
            close(descriptor)
            throw .cannotOpenFile("\(file) is not a regular file")
        }
    }
}
