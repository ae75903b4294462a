import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A second name for the partial file an attempt continues, so that a response the daemon retries does not cost the
/// bytes already downloaded. The engine keeps to Darwin's rule for a resumed download answered with neither 206 nor
/// 200 (a `503` with `Retry-After`, say): the response is the download's, and the partial file is deleted. In the
/// daemon such a response is retried, not delivered, and the next attempt should continue where this one started.
/// The second name is a hard link (no copy; same file until the engine unlinks its name), hidden from the daemon's
/// look for the partial file by its leading dot.
enum PartialFileKeeper {
    static let keptName = ".kept-partial"

    /// Gives the partial file `name` (the attempt about to start continues it) its second name; with `nil`, only
    /// forgets an earlier attempt's.
    static func keep(_ name: String?, in folder: URL) {
        let kept = folder.appendingPathComponent(keptName).path
        unlink(kept)
        guard let name else { return }
        _ = link(folder.appendingPathComponent(name).path, kept)
    }

    /// Brings the kept bytes back under a new download-file name (the engine may still be deleting the old one),
    /// and returns that name; `nil` when nothing was kept.
    static func restore(in folder: URL) -> String? {
        let name = "CFNetworkDownload_\(UUID().uuidString).tmp"
        guard rename(folder.appendingPathComponent(keptName).path, folder.appendingPathComponent(name).path) == 0
        else { return nil }
        return name
    }

    /// The attempt ended otherwise: the second name goes (the file stays under the engine's name, if it has one).
    static func discard(in folder: URL) {
        unlink(folder.appendingPathComponent(keptName).path)
    }
}
