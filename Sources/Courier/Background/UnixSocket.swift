import CourierHTTP
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The few blocking Unix-domain-socket calls a background session and `courierd` make: connect, listen, accept, and
/// the peer's credentials. Every call blocks: make them on a thread of their own, never on an event loop.
package enum UnixSocket {
    /// The longest socket path (`sun_path` holds 108 bytes, with the terminating NUL).
    package static let maximumPathLength = 107

    /// An `errno` value from a socket call.
    package struct Failure: Error, Equatable {
        package var code: Int32
    }

    /// A connected socket to `path`, or the `errno` that refused it (`ENOENT`, `ECONNREFUSED`: no daemon; `EPERM`:
    /// the socket is another user's).
    package static func connect(to path: String) -> Result<Int32, Failure> {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return .failure(Failure(code: errno)) }
        let result = withAddress(path) { address, length in Glibc.connect(descriptor, address, length) }
        guard result == 0 else {
            let code = result == -2 ? ENAMETOOLONG : errno
            close(descriptor)
            return .failure(Failure(code: code))
        }
        // The listener must be this user's, as the daemon admits only its own user: a socket another local user
        // planted where the app was sent (the path a crashed daemon published, in a `/tmp` folder cleared since)
        // would receive the app's requests, cookies and passwords, and send events naming any of the user's files.
        guard admits(peer: peerUserID(of: descriptor)) else {
            close(descriptor)
            return .failure(Failure(code: EPERM))
        }
        return .success(descriptor)
    }

    /// A listening socket at `path` (any old socket file there is removed first: the caller holds the daemon's
    /// lock, so no live daemon owns it), readable and writable by the owner only.
    package static func listen(at path: String) throws(TransferError) -> Int32 {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw .cannotCreateFile("cannot make a socket: \(describe(errno))") }
        unlink(path)
        // The folder is private already; the mode is a second fence for a socket that is never connectable by others.
        // Set after bind(2), not by narrowing the umask around it: the umask is the whole process's, and every file
        // another thread of the app created meanwhile got the narrowed mode. The socket file exists with the umask's
        // mode until the chmod, but nobody can connect to it before listen(2) (a Unix stream socket that does not
        // listen refuses with ECONNREFUSED), and only the user can reach the private folder to swap the name.
        let bound = withAddress(path) { address, length in bind(descriptor, address, length) }
        guard bound == 0, chmod(path, 0o600) == 0, Glibc.listen(descriptor, 64) == 0 else {
            let code = bound == -2 ? ENAMETOOLONG : errno
            if bound == 0 { unlink(path) }
            close(descriptor)
            throw .cannotCreateFile("cannot listen at \(path): \(describe(code))")
        }
        return descriptor
    }

    /// The next connection on `listener`, or `nil` when accept failed (the listener was closed).
    package static func accept(on listener: Int32) -> Int32? {
        while true {
            let descriptor = Glibc.accept(listener, nil, nil)
            if descriptor >= 0 {
                _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
                return descriptor
            }
            if errno == EINTR || errno == ECONNABORTED { continue }
            return nil
        }
    }

    /// The user the process at the other end of `descriptor` ran as when it connected (`SO_PEERCRED`), or `nil`
    /// when the kernel cannot tell.
    package static func peerUserID(of descriptor: Int32) -> uid_t? {
        var credentials = PeerCredentials()
        var length = socklen_t(MemoryLayout<PeerCredentials>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0,
            length == socklen_t(MemoryLayout<PeerCredentials>.size)
        else { return nil }
        return credentials.uid
    }

    /// Linux's `struct ucred` (not exported to Swift without `_GNU_SOURCE`): the same layout.
    private struct PeerCredentials {
        var pid: pid_t = 0
        var uid: uid_t = 0
        var gid: gid_t = 0
    }

    /// Whether a connection from `peer` may talk to this user's daemon: only the same user (root included only when
    /// the daemon runs as root).
    package static func admits(peer: uid_t?, owner: uid_t = geteuid()) -> Bool {
        guard let peer else { return false }
        return peer == owner
    }

    /// Calls `body` with `path` as a `sockaddr_un`; returns -2 when the path does not fit.
    private static func withAddress(
        _ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32
    ) -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count <= maximumPathLength, !bytes.contains(0) else { return -2 }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                body($0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
    }

    package static func describe(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}
