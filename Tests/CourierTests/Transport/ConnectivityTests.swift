import Courier
import CourierHTTP
import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing

@testable import CourierTransport

#if canImport(Glibc)
    import Glibc
#endif

/// `waitsForConnectivity`: a task whose host no network path reaches waits (and says so once) instead of failing,
/// and goes on when the path appears. On loopback the missing path is a local daemon's socket that does not exist
/// yet; the errno table below covers the network cases.
@Suite("Waiting for connectivity")
struct ConnectivityTests {
    /// Records `taskIsWaitingForConnectivity` and the completion.
    final class WaitingDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
        private let state = NIOLockedValueBox((waits: 0, completions: [(any Error)?]()))
        var waits: Int { state.withLockedValue { $0.waits } }
        var completions: [(any Error)?] { state.withLockedValue { $0.completions } }

        func urlSession(_ session: URLSession, taskIsWaitingForConnectivity task: URLSessionTask) {
            state.withLockedValue { $0.waits += 1 }
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            state.withLockedValue { $0.completions.append(error) }
        }
    }

    /// A server for a socket in a private folder, not started yet, and its URL.
    private func socketServer() throws -> (MockServer, URL, folder: URL) {
        let folder = try makeTemporaryDirectory()
        let server = MockServer(unixSocketPath: folder.appendingPathComponent("late.sock").path)
        return (server, server.url("/hello"), folder)
    }

    @Test func aTaskWaitsForAMissingSocketAndGoesOnWhenTheDaemonComesUp() async throws {
        let (server, url, folder) = try socketServer()
        defer { try? FileManager.default.removeItem(at: folder) }
        server.route("/hello", response: .ok("up"))
        let delegate = WaitingDelegate()
        let session = makeSession(delegate: delegate) { $0.waitsForConnectivity = true }
        defer { session.invalidateAndCancel() }
        session.dataTask(with: url).resume()
        try await waitUntil { delegate.waits == 1 }
        // Several attempts fail meanwhile; the delegate hears of the wait once.
        try await Task.sleep(for: .milliseconds(600))
        #expect(delegate.waits == 1)
        #expect(delegate.completions.isEmpty)
        try await server.start()
        defer { Task { try? await server.shutdown() } }
        try await waitUntil { delegate.completions.count == 1 }
        let error = delegate.completions.first ?? nil
        #expect(error == nil)
        #expect(server.requests(path: "/hello").count == 1)
        #expect(delegate.waits == 1)
    }

    @Test func withoutWaitingAMissingSocketFailsAtOnce() async throws {
        let (_, url, folder) = try socketServer()
        defer { try? FileManager.default.removeItem(at: folder) }
        let delegate = WaitingDelegate()
        let session = makeSession(delegate: delegate)
        defer { session.invalidateAndCancel() }
        let outcome = await session.runDataTask(url)
        #expect(outcome.urlError?.code == .cannotConnectToHost)
        #expect(delegate.waits == 0)
    }

    @Test func theResourceTimeoutEndsTheWait() async throws {
        let (_, url, folder) = try socketServer()
        defer { try? FileManager.default.removeItem(at: folder) }
        let delegate = WaitingDelegate()
        let session = makeSession(delegate: delegate) {
            $0.waitsForConnectivity = true
            $0.timeoutIntervalForResource = 1
        }
        defer { session.invalidateAndCancel() }
        session.dataTask(with: url).resume()
        try await waitUntil { delegate.completions.count == 1 }
        let error = delegate.completions.first ?? nil
        #expect((error as? URLError)?.code == .timedOut)
        #expect(delegate.waits == 1)
    }

    @Test func cancellingAWaitingTaskEndsItAsCancelled() async throws {
        let (_, url, folder) = try socketServer()
        defer { try? FileManager.default.removeItem(at: folder) }
        let delegate = WaitingDelegate()
        let session = makeSession(delegate: delegate) { $0.waitsForConnectivity = true }
        defer { session.invalidateAndCancel() }
        let task = session.dataTask(with: url)
        task.resume()
        try await waitUntil { delegate.waits == 1 }
        task.cancel()
        try await waitUntil { delegate.completions.count == 1 }
        let error = delegate.completions.first ?? nil
        #expect((error as? URLError)?.code == .cancelled)
    }

    @Test func aRefusedConnectionIsNotALackOfConnectivityAndFailsAtOnce() async throws {
        let refusing = try RefusingPort()
        let delegate = WaitingDelegate()
        let session = makeSession(delegate: delegate) { $0.waitsForConnectivity = true }
        defer { session.invalidateAndCancel() }
        let outcome = await session.runDataTask(try #require(URL(string: "http://127.0.0.1:\(refusing.port)/")))
        #expect(outcome.urlError?.code == .cannotConnectToHost)
        #expect(delegate.waits == 0)
    }

    /// How connect errors map: Darwin's codes, and which of them `waitsForConnectivity` waits out.
    @Test(arguments: [
        (ENETUNREACH, URLError.Code.notConnectedToInternet, true),
        (EHOSTUNREACH, .cannotConnectToHost, true),
        (ECONNREFUSED, .cannotConnectToHost, false),
        (ETIMEDOUT, .timedOut, false),
    ])
    func connectErrorsMapToDarwinsCodes(errno code: Int32, expected: URLError.Code, waits: Bool) throws {
        let endpoint = try Endpoint(url: #require(URL(string: "http://example.invalid/")))
        let error = TransportErrorMapping.connectError(IOError(errnoCode: code, reason: "connect"), endpoint: endpoint)
        #expect(error.urlErrorCode == expected)
        #expect(error.isLackOfConnectivity == waits)
    }
}
