import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

/// `URLSessionStreamTask` against ``MockTCPServer`` on loopback.
@Suite struct StreamTaskTests {
    @Test func echoRoundTripHonoursMinimumAndMaximumLengths() async throws {
        try await withTCPServer { server in
            let session = makeSession()
            let queue = session.delegateQueue
            let task = session.streamTask(withHostName: "127.0.0.1", port: server.port)
            task.resume()
            let write = await task.write("hello world", queue: queue)
            #expect(write.error == nil)
            #expect(write.onDelegateQueue)
            let first = await task.read(min: 5, max: 5, queue: queue)
            #expect(first.text == "hello")
            #expect(first.atEOF == false)
            #expect(first.onDelegateQueue)
            let second = await task.read(min: 6, max: 100, queue: queue)
            #expect(second.text == " world")
            #expect(task.countOfBytesSent == 11)
            #expect(task.countOfBytesReceived == 11)
            #expect(task.state == .running)
            #expect(server.receivedBytes == Array("hello world".utf8))
            task.cancel()
        }
    }

    @Test func readsAreServedInOrder() async throws {
        try await withTCPServer { server in
            let session = makeSession()
            let queue = session.delegateQueue
            let task = session.streamTask(withHostName: "127.0.0.1", port: server.port)
            task.resume()
            let order = NIOLockedValueBox<[String]>([])
            let done = AsyncGate()
            for _ in 0..<3 {
                task.readData(ofMinLength: 3, maxLength: 3, timeout: 30) { data, _, _ in
                    let count = order.withLockedValue { order in
                        order.append(data.map { String(decoding: $0, as: UTF8.self) } ?? "nil")
                        return order.count
                    }
                    if count == 3 { done.open() }
                }
            }
            #expect(await task.write("aaabbbccc", queue: queue).error == nil)
            await done.wait()
            #expect(order.withLockedValue { $0 } == ["aaa", "bbb", "ccc"])
            task.cancel()
        }
    }

    @Test func callsMadeBeforeResumeWaitForTheConnection() async throws {
        try await withTCPServer { server in
            let session = makeSession()
            let queue = session.delegateQueue
            let task = session.streamTask(withHostName: "localhost", port: server.port)
            let written = task.startWrite("early", queue: queue)
            let read = task.startRead(min: 5, max: 5, queue: queue)
            try await Task.sleep(for: .milliseconds(50))
            #expect(server.connectionCount == 0)
            #expect(task.state == .suspended)
            task.resume()
            #expect(await written.value?.error == nil)
            #expect(await read.value?.text == "early")
            task.cancel()
        }
    }

    @Test func aReadTimesOutAloneAndTheTaskGoesOn() async throws {
        try await withTCPServer { server in
            let session = makeSession()
            let queue = session.delegateQueue
            let task = session.streamTask(withHostName: "127.0.0.1", port: server.port)
            task.resume()
            let started = ContinuousClock.now
            let timedOut = await task.read(min: 1, max: 10, timeout: 0.2, queue: queue)
            #expect(timedOut.urlErrorCode == .timedOut)
            #expect(ContinuousClock.now - started >= .milliseconds(150))
            #expect(task.state == .running)
            #expect(await task.write("still", queue: queue).error == nil)
            #expect(await task.read(min: 5, max: 5, queue: queue).text == "still")
            task.cancel()
        }
    }

    @Test func aWriteTimesOutWhenThePeerDoesNotRead() async throws {
        try await withTCPServer(.silent) { server in
            let session = makeSession()
            let queue = session.delegateQueue
            let task = session.streamTask(withHostName: "127.0.0.1", port: server.port)
            task.resume()
            // Far more than the loopback socket buffers of both ends hold.
            let write = await task.write(Data(count: 48 * 1024 * 1024), timeout: 0.5, queue: queue)
            #expect(write.urlErrorCode == .timedOut)
            #expect(task.countOfBytesSent == 0)
            task.cancel()
        }
    }

    @Test func readingPastTheEndOfInputReportsAtEOF() async throws {
        try await withTCPServer(.script([.send("bye"), .closeWrite])) { server in
            let delegate = StreamRecordingDelegate()
            let session = makeSession(delegate: delegate)
            delegate.expectedQueue = session.delegateQueue
            let queue = session.delegateQueue
            let task = session.streamTask(withHostName: "127.0.0.1", port: server.port)
            task.resume()
            // Fewer bytes than asked for: at the end of input a read gets what is left.
            let last = await task.read(min: 10, max: 100, queue: queue)
            #expect(last.text == "bye")
            #expect(last.atEOF)
            #expect(last.error == nil)
            let after = await task.read(min: 1, max: 100, queue: queue)
            #expect(after.data == nil || after.data?.isEmpty == true)
            #expect(after.atEOF)
            #expect(after.error == nil)
            try await waitUntil { delegate.events.contains(.readClosed) }
            #expect(delegate.callsOffQueue == 0)
            task.cancel()
        }
    }

    @Test func closeWriteIsSeenByThePeerAndTheTaskCompletesOnceBothSidesClosed() async throws {
        try await withTCPServer { server in
            let delegate = StreamRecordingDelegate()
            let session = makeSession(delegate: delegate)
            delegate.expectedQueue = session.delegateQueue
            let queue = session.delegateQueue
            let task = session.streamTask(withHostName: "127.0.0.1", port: server.port)
            task.resume()
            #expect(await task.write("ping", queue: queue).error == nil)
            task.closeWrite()
            // The echo server closes its own write side once it read the end of input.
            try await waitUntil { server.endOfInputCount == 1 }
            // A generous limit: a loaded machine can hold the event loop for seconds, and a read that times out
            // leaves the bytes buffered and the task open (as on Darwin), which this test is not about.
            let read = await task.read(min: 100, max: 100, timeout: 60, queue: queue)
            #expect(read.text == "ping")
            #expect(read.atEOF)
            guard read.error == nil else {
                task.cancel()
                return
            }
            await delegate.completed.wait()
            #expect(delegate.events.contains(.writeClosed))
            #expect(delegate.events.contains(.readClosed))
            #expect(delegate.events.last == .complete(nil))
            #expect(delegate.callsOffQueue == 0)
            #expect(task.state == .completed)
            #expect(task.error == nil)
        }
    }

    @Test func aWriteAfterCloseWriteFails() async throws {
        try await withTCPServer { server in
            let session = makeSession()
            let queue = session.delegateQueue
            let task = session.streamTask(withHostName: "127.0.0.1", port: server.port)
            task.resume()
            task.closeWrite()
            let write = await task.write("late", queue: queue)
            #expect((write.error as? POSIXError)?.code == .EPIPE)
            #expect(write.onDelegateQueue)
            task.cancel()
        }
    }

    @Test func closeReadServesEarlierReadsThenFailsLaterOnesWhileWritesGoOn() async throws {
        try await withTCPServer { server in
            let session = makeSession()
            let queue = session.delegateQueue
            let task = session.streamTask(withHostName: "127.0.0.1", port: server.port)
            task.resume()
            // Made before `closeRead()` (an `async let` read once came after it on a loaded machine).
            let earlier = task.startRead(min: 3, max: 3, queue: queue)
            task.closeRead()
            #expect(await task.write("abc", queue: queue).error == nil)
            #expect(await earlier.value?.text == "abc")
            let later = await task.read(min: 1, max: 1, queue: queue)
            #expect((later.error as? POSIXError)?.code == .ENOTCONN)
            #expect(await task.write("more", queue: queue).error == nil)
            try await waitUntil { server.receivedBytes == Array("abcmore".utf8) }
            task.cancel()
        }
    }

    @Test(arguments: [false, true])
    func startSecureConnectionTurnsToTLSWhenTheCertificateIsTrusted(withDelegate: Bool) async throws {
        try await withTCPServer(startTLSCommand: "STARTTLS\r\n") { server in
            let delegate = StreamRecordingDelegate()
            let session = makeSession(delegate: withDelegate ? delegate : nil) { configuration in
                configuration.courierAdditionalTrustedCertificates = [Data(server.certificateDER)]
            }
            let queue = session.delegateQueue
            let task = session.streamTask(withHostName: "localhost", port: server.port)
            task.resume()
            #expect(await task.write("STARTTLS\r\n", queue: queue).error == nil)
            #expect(await task.read(min: 7, max: 7, queue: queue).text == "READY\r\n")
            task.startSecureConnection()
            // Generous timeouts: the calls wait for the TLS handshake, slow on a loaded machine.
            #expect(await task.write("secret", timeout: 30, queue: queue).error == nil)
            let echoed = await task.read(min: 6, max: 6, timeout: 30, queue: queue)
            #expect(echoed.text == "secret")
            #expect(echoed.error == nil)
            #expect(server.receivedBytes == Array("STARTTLS\r\nsecret".utf8))
            task.cancel()
        }
    }

    @Test(arguments: [false, true])
    func startSecureConnectionFailsWhenTheCertificateIsNotTrusted(withDelegate: Bool) async throws {
        try await withTCPServer(startTLSCommand: "STARTTLS\r\n") { server in
            let delegate = StreamRecordingDelegate()
            // The session trusts the shared test CA only, not the server's self-signed certificate.
            let session = makeSession(delegate: withDelegate ? delegate : nil)
            let queue = session.delegateQueue
            let task = session.streamTask(withHostName: "localhost", port: server.port)
            task.resume()
            #expect(await task.write("STARTTLS\r\n", queue: queue).error == nil)
            #expect(await task.read(min: 7, max: 7, queue: queue).text == "READY\r\n")
            task.startSecureConnection()
            let read = await task.read(min: 1, max: 10, timeout: 30, queue: queue)
            #expect(read.urlErrorCode == .serverCertificateUntrusted)
            try await waitUntil { task.state == .completed }
            #expect((task.error as? URLError)?.code == .serverCertificateUntrusted)
            if withDelegate {
                await delegate.completed.wait()
                #expect(delegate.events.last == .complete(.serverCertificateUntrusted))
            }
            #expect(!server.receivedBytes.contains(Array("secret".utf8)))
        }
    }

    /// Without a delegate NIOSSL verifies the server, and took an address entry equal to the connected peer's for
    /// any host name: the leaf must name the host itself (`localhost` here), or nothing is sent.
    @Test func startSecureConnectionRefusesALeafThatNamesOnlyThePeersAddress() async throws {
        let authority = try TestCertificateAuthority()
        let identity = try authority.serverIdentity(
            dnsNames: ["elsewhere.test"], ipAddresses: [[127, 0, 0, 1], Array(repeating: 0, count: 15) + [1]])
        try await withTCPServer(startTLSCommand: "STARTTLS\r\n", tlsIdentity: identity) { server in
            let session = makeSession { $0.courierAdditionalTrustedCertificates = [authority.certificate.derData] }
            let queue = session.delegateQueue
            let task = session.streamTask(withHostName: "localhost", port: server.port)
            task.resume()
            #expect(await task.write("STARTTLS\r\n", queue: queue).error == nil)
            #expect(await task.read(min: 7, max: 7, queue: queue).text == "READY\r\n")
            task.startSecureConnection()
            #expect(await task.write("secret", timeout: 30, queue: queue).urlErrorCode == .serverCertificateUntrusted)
            try await waitUntil { task.state == .completed }
            #expect((task.error as? URLError)?.code == .serverCertificateUntrusted)
            #expect(!server.receivedBytes.contains(Array("secret".utf8)))
        }
    }

    @Test func captureStreamsCompletesEarlierCallsThenHandsOverWorkingStreams() async throws {
        try await withTCPServer { server in
            let delegate = StreamRecordingDelegate()
            let session = makeSession(delegate: delegate)
            let task = session.streamTask(withHostName: "127.0.0.1", port: server.port)
            task.resume()
            let earlierRead = NIOLockedValueBox<String?>(nil)
            task.write(Data("first".utf8), timeout: 30) { _ in }
            task.readData(ofMinLength: 5, maxLength: 5, timeout: 30) { data, _, _ in
                earlierRead.withLockedValue { $0 = data.map { String(decoding: $0, as: UTF8.self) } }
            }
            task.captureStreams()
            await delegate.becameStreams.wait()
            #expect(earlierRead.withLockedValue { $0 } == "first")
            #expect(task.state == .completed)
            // The streams go to the thread that reads and writes them, and are used there only.
            nonisolated(unsafe) let (input, output) = try #require(delegate.streams)
            // Blocking reads, on a thread of their own: not on one of the few the concurrent tests share.
            let echoed = await onOwnThread { () -> (String, Int) in
                input.open()
                output.open()
                let message = Array("through streams".utf8)
                let written = output.write(message, maxLength: message.count)
                guard written == message.count else { return ("short write \(written)", -2) }
                var received: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 64)
                while received.count < message.count {
                    let count = input.read(&buffer, maxLength: buffer.count)
                    guard count > 0 else { return (String(decoding: received, as: UTF8.self), count) }
                    received += buffer[0..<count]
                }
                // Closing the output stream closes the write side: the echo server then closes its own.
                output.close()
                let end = input.read(&buffer, maxLength: buffer.count)
                input.close()
                return (String(decoding: received, as: UTF8.self), end)
            }
            #expect(echoed.0 == "through streams")
            #expect(echoed.1 == 0)
            try await waitUntil { server.endOfInputCount == 1 }
            #expect(server.receivedBytes == Array("firstthrough streams".utf8))
            // The task ended with the hand-over: no completion call, as on Darwin.
            try await Task.sleep(for: .milliseconds(50))
            #expect(!delegate.events.contains { if case .complete = $0 { return true } else { return false } })
            #expect(delegate.events == [.becameStreams])
        }
    }

    @Test func cancelFailsPendingCallsAndCompletesTheTask() async throws {
        try await withTCPServer { server in
            let delegate = StreamRecordingDelegate()
            let session = makeSession(delegate: delegate)
            let queue = session.delegateQueue
            let task = session.streamTask(withHostName: "127.0.0.1", port: server.port)
            task.resume()
            let pending = task.startRead(min: 1, max: 10, timeout: 0, queue: queue)
            try await waitUntil { server.connectionCount == 1 }
            task.cancel()
            #expect(await pending.value?.urlErrorCode == .cancelled)
            await delegate.completed.wait()
            #expect(delegate.events == [.complete(.cancelled)])
            #expect(task.state == .completed)
            #expect((task.error as? URLError)?.code == .cancelled)
            #expect(await task.write("after", queue: queue).urlErrorCode == .cancelled)
        }
    }

    @Test func cancelBeforeResumeFailsTheCallsMadeSoFar() async throws {
        let delegate = StreamRecordingDelegate()
        let session = makeSession(delegate: delegate)
        let queue = session.delegateQueue
        let task = session.streamTask(withHostName: "127.0.0.1", port: 9)
        let pending = task.startWrite("never", queue: queue)
        task.cancel()
        #expect(await pending.value?.urlErrorCode == .cancelled)
        await delegate.completed.wait()
        #expect(delegate.events == [.complete(.cancelled)])
    }

    @Test func aRefusedPortFailsWithCannotConnectToHost() async throws {
        let port = try RefusingPort()
        let delegate = StreamRecordingDelegate()
        let session = makeSession(delegate: delegate)
        let queue = session.delegateQueue
        let task = session.streamTask(withHostName: "127.0.0.1", port: port.port)
        task.resume()
        let read = await task.read(min: 1, max: 10, queue: queue)
        #expect(read.urlErrorCode == .cannotConnectToHost)
        await delegate.completed.wait()
        #expect(delegate.events == [.complete(.cannotConnectToHost)])
        #expect((task.error as? URLError)?.code == .cannotConnectToHost)
        withExtendedLifetime(port) {}
    }

    /// The operations that must succeed get a minute (a starved CI machine once took more than 5 s to connect and
    /// echo); only the read meant to time out has a short limit.
    @Test func asyncFormsWriteReadAndThrow() async throws {
        try await withTCPServer { server in
            let session = makeSession()
            let task = session.streamTask(withHostName: "127.0.0.1", port: server.port)
            task.resume()
            try await task.write(Data("async".utf8), timeout: 60)
            let (data, atEOF) = try await task.readData(ofMinLength: 5, maxLength: 5, timeout: 60)
            #expect(data == Data("async".utf8))
            #expect(!atEOF)
            await #expect(throws: URLError.self) {
                _ = try await task.readData(ofMinLength: 1, maxLength: 1, timeout: 0.1)
            }
            task.closeWrite()
            await #expect(throws: POSIXError.self) { try await task.write(Data("x".utf8), timeout: 60) }
            let (rest, end) = try await task.readData(ofMinLength: 1, maxLength: 10, timeout: 60)
            #expect(rest == nil)
            #expect(end)
        }
    }
}
