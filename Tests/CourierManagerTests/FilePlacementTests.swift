import CourierMockServer
import Foundation
import Testing

@testable import CourierManager

/// Placing a finished download: rename on one file system, a complete copy renamed over the target across two.
@Suite("File placement")
struct FilePlacementTests {
    private func folder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("placement-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    @Test(arguments: [false, true])
    func anExistingFileIsReplacedWholeAndNothingIsLeftBeside(acrossFileSystems: Bool) throws {
        let folder = try folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let source = folder.appendingPathComponent("download.tmp")
        let target = folder.appendingPathComponent("file.bin")
        let contents = MockBody.patternBytes(offset: 0, count: 3_000_000)
        try contents.write(to: source)
        try Data("the user's old file".utf8).write(to: target)
        // Across file systems rename(2) fails with EXDEV: the copying path runs.
        let crossDevice: (String, String) -> Int32 = { _, _ in
            errno = EXDEV
            return -1
        }
        if acrossFileSystems {
            try FilePlacement.place(source, at: target, renaming: crossDevice)
        } else {
            try FilePlacement.place(source, at: target)
        }
        #expect(try Data(contentsOf: target) == contents)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["file.bin"])
    }

    @Test func aCopyThatCannotBeMadeLeavesTheTargetAsItWas() throws {
        let folder = try folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let target = folder.appendingPathComponent("file.bin")
        try Data("keep me".utf8).write(to: target)
        let missing = folder.appendingPathComponent("gone.tmp")
        #expect(throws: (any Error).self) {
            try FilePlacement.place(missing, at: target) { _, _ in
                errno = EXDEV
                return -1
            }
        }
        #expect(try Data(contentsOf: target) == Data("keep me".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["file.bin"])
    }
}
