import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A small tmpfs mounted on a folder, to fill a disk for real (root only; `mount(8)` must be allowed, as it is in
/// CI's container). The test grows it to continue, and unmounts it at the end.
struct SmallFileSystem {
    let folder: URL

    /// Whether this machine lets the tests mount one.
    static let isAvailable: Bool = {
        guard geteuid() == 0, access("/bin/mount", X_OK) == 0 || access("/usr/bin/mount", X_OK) == 0 else {
            return false
        }
        guard let probe = try? makeTemporaryDirectory() else { return false }
        defer { try? FileManager.default.removeItem(at: probe) }
        guard run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", probe.path]) else { return false }
        return run(["umount", probe.path])
    }()

    /// Mounts a tmpfs of `kilobytes` on `folder` (created if needed), private to the user (mode 0700).
    init(at folder: URL, kilobytes: Int) throws {
        self.folder = folder
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        guard Self.run(["mount", "-t", "tmpfs", "-o", "size=\(kilobytes)k,mode=0700", "tmpfs", folder.path]) else {
            throw POSIXError(.EPERM)
        }
    }

    func grow(toKilobytes kilobytes: Int) -> Bool {
        Self.run(["mount", "-o", "remount,size=\(kilobytes)k", folder.path])
    }

    func unmount() {
        _ = Self.run(["umount", "-l", folder.path])
    }

    @discardableResult
    private static func run(_ arguments: [String]) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }
}
