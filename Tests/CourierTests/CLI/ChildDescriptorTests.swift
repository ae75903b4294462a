import CourierTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The descriptors the tests make for their children are close-on-exec in this process: the suite runs in parallel,
/// and a child another test starts (a daemon started without closing our descriptors) would otherwise inherit them.
/// A reader then saw no end of file, or no end of the terminal, until that child exited.
@Suite("Test children: descriptors")
struct ChildDescriptorTests {
    private static func closesOnExec(_ descriptor: Int32) -> Bool {
        let flags = fcntl(descriptor, F_GETFD)
        return flags >= 0 && flags & FD_CLOEXEC != 0
    }

    @Test func aChildsPipeIsCloseOnExecHere() async throws {
        let ends = try ChildProcess.closeOnExecPipe()
        defer {
            close(ends.read)
            close(ends.write)
        }
        #expect(Self.closesOnExec(ends.read))
        #expect(Self.closesOnExec(ends.write))
        let child = try ChildProcess("/bin/true", [], standardOutput: .pipe, standardError: .pipe)
        let output = try #require(child.standardOutput)
        let error = try #require(child.standardError)
        #expect(Self.closesOnExec(output.fileDescriptor))
        #expect(Self.closesOnExec(error.fileDescriptor))
        // The child's copies are made by dup2, which clears the flag: it still writes, and the reader sees the end.
        let written = await onOwnThread { child.standardOutput?.readDataToEndOfFile() }
        #expect(written?.isEmpty == true)
        #expect(await child.exitStatus() == 0)
    }

    @Test func aPseudoTerminalIsCloseOnExecHere() throws {
        let terminal = try PseudoTerminal(columns: 40)
        defer { terminal.closeTerminalSide() }
        #expect(Self.closesOnExec(terminal.controller))
        #expect(Self.closesOnExec(terminal.terminal))
    }
}
