import Courier
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

    /// The longest record read, in bytes (Courier refuses longer resume data anyway).
    static let maximumSize = 1 << 20

    /// The resume data kept for `destination`, if there is a usable record.
    ///
    /// The open does not block (a FIFO planted at the record's name, in a shared folder such as `/tmp`, would hold the
    /// tool until someone wrote to it; it is refused as not a regular file instead), and at most one byte more than
    /// ``maximumSize`` is read: a record that grew after its size was checked is refused, not read whole.
    static func load(for destination: URL) -> Data? {
        let path = location(for: destination).path
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        var info = stat()
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_uid == geteuid(),
            Int(info.st_size) <= maximumSize
        else { return nil }
        guard let data = try? handle.read(upToCount: maximumSize + 1), data.count <= maximumSize else { return nil }
        return data
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

    /// The partial file the resume data continues, when the tool may delete it: only a name Courier gives its
    /// download files (`CFNetworkDownload_*.tmp`), and only in a folder that is private to the user. Courier refuses
    /// to resume from a record naming any other file, or through a `.courier-partials` that is a symbolic link or
    /// another user's folder, and that refusal must not make the tool delete the file itself: the record is a file
    /// on disk that something else may have written, and a link planted at the folder's path would lead the unlink
    /// to a file outside it.
    static func deletablePartialFile(in resumeData: Data, folder: URL) -> URL? {
        guard let name = partialFileName(in: resumeData), DownloadDirectory.isDownloadFileName(name),
            PrivateFolder.privacyProblem(of: folder.path) == nil
        else { return nil }
        return folder.appendingPathComponent(name, isDirectory: false)
    }
}
