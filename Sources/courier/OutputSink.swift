import Foundation

/// Where `courier get` writes the body: standard output, or a file that appears only when the transfer
/// succeeded (it is written to a temporary file beside it and renamed at the end).
final class OutputSink: @unchecked Sendable {
    private let handle: FileHandle
    private let destination: URL?
    private let temporary: URL?

    init(path: String?) throws {
        guard let path, path != "-" else {
            handle = FileHandle.standardOutput
            destination = nil
            temporary = nil
            return
        }
        let destination = URL(fileURLWithPath: path)
        let temporary = destination.deletingLastPathComponent()
            .appendingPathComponent(".\(destination.lastPathComponent).courier-partial-\(getpid())")
        guard FileManager.default.createFile(atPath: temporary.path, contents: nil) else {
            throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: temporary.path])
        }
        handle = try FileHandle(forWritingTo: temporary)
        self.destination = destination
        self.temporary = temporary
    }

    func write(_ data: Data) throws {
        try handle.write(contentsOf: data)
    }

    /// Makes the file visible under its name.
    func commit() throws {
        guard let destination, let temporary else { return }
        try handle.close()
        if FileManager.default.fileExists(atPath: destination.path) {
            _ = try FileManager.default.replaceItemAt(destination, withItemAt: temporary)
        } else {
            try FileManager.default.moveItem(at: temporary, to: destination)
        }
    }

    /// Removes the partial file.
    func discard() {
        guard let temporary else { return }
        try? handle.close()
        try? FileManager.default.removeItem(at: temporary)
    }
}
