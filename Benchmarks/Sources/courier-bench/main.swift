import BenchmarkCore
import Foundation
import NIOCore
import NIOPosix

// An experiment, not a default: NIO_GLOBAL_EXECUTOR=1 runs the process's Swift tasks on NIO's event loops, so that
// a response resumes its awaiting task without a thread hop. It measures what those hops cost (ANALYSIS.md); an
// app may choose it, Courier does not.
if ProcessInfo.processInfo.environment["NIO_GLOBAL_EXECUTOR"] == "1" {
    NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
}
await BenchmarkMain.run(URLSessionClient.self)
