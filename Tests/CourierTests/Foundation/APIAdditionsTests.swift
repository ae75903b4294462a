import Courier
import CourierTestSupport
import Foundation
import Testing

@Suite("FoundationNetworking API additions")
struct APIAdditionsTests {
    @Test(
        "tls_ciphersuite_t raw values are IANA identifiers",
        arguments: [
            (tls_ciphersuite_t.AES_128_GCM_SHA256, UInt16(0x1301)), (.AES_256_GCM_SHA384, 0x1302),
            (.CHACHA20_POLY1305_SHA256, 0x1303), (.ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, 0xc02b),
            (.ECDHE_RSA_WITH_AES_256_GCM_SHA384, 0xc030), (.ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256, 0xcca8),
            (.RSA_WITH_3DES_EDE_CBC_SHA, 0x000a), (.RSA_WITH_AES_128_CBC_SHA, 0x002f),
        ])
    func cipherSuites(suite: tls_ciphersuite_t, raw: UInt16) {
        #expect(suite.rawValue == raw)
        #expect(tls_ciphersuite_t(rawValue: raw) == suite)
    }

    @Test("Unknown raw values are nil; metrics report no cipher suite until collected")
    func unknownAndMetrics() throws {
        #expect(tls_ciphersuite_t(rawValue: 0x0000) == nil)
        #expect(tls_protocol_version_t(rawValue: 0x0300) == nil)
        let request = URLRequest(url: try #require(URL(string: "https://example.com")))
        let transaction = URLSessionTaskTransactionMetrics(values: .init(request: request))
        #expect(transaction.negotiatedTLSCipherSuite == nil)
    }

    @Test("URLSessionDownloadTaskResumeData is Darwin's key")
    func resumeDataKey() {
        #expect(URLSessionDownloadTaskResumeData == "NSURLSessionDownloadTaskResumeData")
        #expect(URLSessionDownloadTaskResumeData == NSURLSessionDownloadTaskResumeData)
    }

    @Test("A WebSocket task's calls wait for the connection; cancel() before resume fails them as cancelled")
    func webSocket() async throws {
        let session = URLSession(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let task = session.webSocketTask(with: try #require(URL(string: "ws://127.0.0.1:9/")))
        let ping = Task { try await task.sendPing() }
        try await Task.sleep(for: .milliseconds(50))
        task.cancel()
        let error = await #expect(throws: URLError.self) { try await ping.value }
        #expect(error?.code == .cancelled)
        #expect((task.error as? URLError)?.code == .cancelled)
        #expect(task.state == .completed)
    }

    @Test("A WebSocket task whose server refuses the connection fails with cannotConnectToHost")
    func webSocketResume() async throws {
        let refusing = try RefusingPort()
        let session = URLSession(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let task = session.webSocketTask(with: try #require(URL(string: "ws://127.0.0.1:\(refusing.port)/")))
        task.resume()
        let received = await #expect(throws: (any Error).self) { try await task.receive() }
        #expect((received as? URLError)?.code == .cannotConnectToHost)
        let deadline = Date().addingTimeInterval(5)
        while task.state != .completed && Date() < deadline {
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        #expect((task.error as? URLError)?.code == .cannotConnectToHost)
    }

    @Test("A task made with init() belongs to no session and fails when resumed")
    func detachedTask() async throws {
        let task = URLSessionTask()
        #expect(task.taskIdentifier == 0 && task.originalRequest == nil)
        #expect(task.progress.totalUnitCount == -1)
        task.resume()
        let deadline = Date().addingTimeInterval(5)
        while task.state != .completed && Date() < deadline {
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        #expect((task.error as? URLError)?.code == .unsupportedURL)
    }
}
