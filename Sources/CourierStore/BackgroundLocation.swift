import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where background sessions live, one set per user: the daemon's socket, pid and lock file in the runtime folder
/// (`$XDG_RUNTIME_DIR/courier/`, else `/tmp/courier-<uid>/`), its journal and each session's files under
/// `$XDG_DATA_HOME/courier/background/` (default `~/.local/share/courier/background/`). Every folder is made private
/// (0700) before use (``PrivateFolder``), so that no other local user can plant a socket or a file there.
package struct BackgroundLocation: Sendable {
    /// The runtime folder: socket, pid file, lock file.
    package let runtimeFolder: URL
    /// The data folder: the journal and one folder per session identifier.
    package let dataFolder: URL

    package init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
            runtimeFolder = URL(fileURLWithPath: runtime, isDirectory: true).appendingPathComponent("courier")
        } else {
            runtimeFolder = URL(fileURLWithPath: "/tmp/courier-\(geteuid())", isDirectory: true)
        }
        let data: URL
        if let value = environment["XDG_DATA_HOME"], value.hasPrefix("/") {
            data = URL(fileURLWithPath: value, isDirectory: true)
        } else {
            let home = environment["HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? NSHomeDirectory()
            data = URL(fileURLWithPath: home, isDirectory: true).appendingPathComponent(".local/share")
        }
        dataFolder = data.appendingPathComponent("courier").appendingPathComponent("background")
    }

    /// The daemon's Unix domain socket.
    package var socket: URL { runtimeFolder.appendingPathComponent("courierd.sock") }
    /// The running daemon's process identifier.
    package var pidFile: URL { runtimeFolder.appendingPathComponent("courierd.pid") }
    /// Held (`flock`) by the one running daemon: a second daemon started at the same moment exits.
    package var lockFile: URL { runtimeFolder.appendingPathComponent("courierd.lock") }
    /// The journal of every background task (a ``StoreDatabase``).
    package var journal: URL { dataFolder.appendingPathComponent("journal.sqlite") }
    /// Held (`flock`) by the one daemon that runs the journal, whatever its runtime folder: `XDG_RUNTIME_DIR` differs
    /// between a login session and a cron job or `sudo -u` of the same user, the data folder does not. (A leading dot:
    /// no session folder name starts with one.)
    package var journalLockFile: URL { dataFolder.appendingPathComponent(".courierd.lock") }
    /// The socket path of the daemon that runs the journal, for clients whose runtime folder is another.
    package var publishedSocketFile: URL { dataFolder.appendingPathComponent(".courierd.socket") }

    /// The socket the daemon running this journal published, or `nil`: none, or the folder or the file is not this
    /// user's own private one (a path planted by someone else is never connected to).
    package func publishedSocketPath() -> String? {
        guard PrivateFolder.privacyProblem(of: dataFolder.path) == nil else { return nil }
        let descriptor = open(publishedSocketFile.path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        var info = stat()
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_uid == geteuid(),
            info.st_size <= 4096, let data = try? handle.readToEnd()
        else { return nil }
        let path = String(decoding: data, as: UTF8.self)
        return path.hasPrefix("/") ? path : nil
    }

    /// The folder of one session identifier's files: partial downloads (one folder per task) and finished files
    /// waiting to be handed to the app.
    package func sessionFolder(_ identifier: String) -> URL {
        dataFolder.appendingPathComponent(Self.component(identifier), isDirectory: true)
    }

    /// The folder a task's download is written in while it runs (only its partial file is ever there).
    package func transferFolder(_ identifier: String, task: Int) -> URL {
        sessionFolder(identifier).appendingPathComponent("task-\(task)", isDirectory: true)
    }

    /// `identifier` as one path component: characters outside a safe set are escaped, so two identifiers never
    /// share a folder and none leaves the data folder.
    package static func component(_ identifier: String) -> String {
        var result = ""
        for byte in identifier.utf8 {
            let scalar = Unicode.Scalar(byte)
            if (scalar.properties.isAlphabetic && byte < 0x80) || ("0"..."9").contains(scalar) || byte == 0x2D
                || byte == 0x5F || (byte == 0x2E && !result.isEmpty)
            {
                result.unicodeScalars.append(scalar)
            } else {
                result += String(format: "%%%02X", byte)
            }
        }
        return result.isEmpty ? "%" : result
    }
}
