import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A loopback TCP port that refuses every connection for as long as this object lives: a socket bound to it that
/// never listens. (A port a server bound and closed can be taken by another test's server meanwhile.)
public final class RefusingPort {
    public let port: Int
    private let descriptor: Int32

    /// A port of the system's choosing.
    public convenience init() throws {
        try self.init(port: 0)
    }

    /// `127.0.0.1:requested` itself (0: one of the system's choosing); throws `EADDRINUSE` when it is taken.
    public init(port requested: Int) throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(requested).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(descriptor, generic, length) == 0 && getsockname(descriptor, generic, &length) == 0
            }
        }
        guard bound else {
            close(descriptor)
            throw POSIXError(.EADDRINUSE)
        }
        self.descriptor = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit {
        close(descriptor)
    }
}
