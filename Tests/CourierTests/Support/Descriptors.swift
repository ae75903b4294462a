import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A duplicate of `descriptor` (without close-on-exec, so a child would inherit it) at the lowest free number from
/// `lowest` up, or -1.
///
/// Never `dup2` onto a chosen number: the suite runs in parallel in one process, and the number may be an event
/// loop's socket at that moment; `dup2` would close it silently and the test's own `close` later close it again.
/// SwiftNIO then fails its `epoll_ctl` with `EBADF` and stops the process (seen once in a full run).
func inheritableDuplicate(of descriptor: Int32, atLeast lowest: Int32) -> Int32 {
    fcntl(descriptor, F_DUPFD, lowest)
}
