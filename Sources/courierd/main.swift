import CourierDaemon
import Foundation

// courierd: the background-transfer daemon of Courier's background sessions. Started on demand by the library (or
// by a systemd user unit); see the README's "Background sessions".
do {
    try DaemonServer.run()
} catch {
    FileHandle.standardError.write(Data("courierd: \(error)\n".utf8))
    exit(1)
}
