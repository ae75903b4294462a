import CourierHTTP
import CourierStore
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// `FILE.courier-partial`: the resume data of an interrupted `-C -` download of FILE, beside it.
///
/// Written like every file the tool makes (a new 0600 file, `O_EXCL`, renamed over the old record), and read
/// only when it is a regular file of this user of at most 1 MiB: a record planted by someone else is ignored. The
/// resume data names the partial file inside `.courier-partials`, which Courier checks again before reopening it.
enum PartialRecord {
    static let suffix = ".courier-partial"

    static func location(for destination: URL) -> URL {
        URL(fileURLWithPath: destination.path + suffix)
    }

    /// The resume data kept for `destination`, if there is a usable record.
    static func load(for destination: URL) -> Data? {
        let path = location(for: destination).path
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        var info = stat()
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_uid == geteuid(),
            info.st_size <= 1 << 20
        else { return nil }
        return try? handle.readToEnd()
    }

    /// Keeps `resumeData` for `destination` (a new 0600 file renamed over the old record, as Courier replaces its
    /// own files).
    static func save(_ resumeData: Data, for destination: URL) throws {
        try PrivateFolder.replaceFile(at: location(for: destination), with: resumeData)
    }

    static func remove(for destination: URL) {
        unlink(location(for: destination).path)
    }

    /// The URL the resume data was downloading (its original request), to refuse continuing another URL's bytes;
    /// `nil` for data Courier would not accept.
    static func originalURL(in resumeData: Data) -> URL? {
        (try? ResumeData(decoding: resumeData))?.originalRequest.url
    }

    /// The name of the partial file the resume data continues, inside the download folder (a bare name: Courier's
    /// `ResumeData` refuses anything else).
    static func partialFileName(in resumeData: Data) -> String? {
        (try? ResumeData(decoding: resumeData))?.tempFileName
    }
}
