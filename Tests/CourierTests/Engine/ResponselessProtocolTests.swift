import Courier
import Foundation
import Testing

/// A protocol that loads its body, or only finishes, without ever calling `didReceive(_:cacheStoragePolicy:)`; or
/// that loads its body before its response.
final class ResponselessProtocol: URLProtocol, @unchecked Sendable {
    override class func canInit(with request: URLRequest) -> Bool {
        request.url?.host == "responseless.test"
    }

    override func startLoading() {
        guard let client, let url = request.url else { return }
        switch url.path {
        case "/body":
            client.urlProtocol(self, didLoad: Data("body".utf8))
        case "/late-response":
            client.urlProtocol(self, didLoad: Data("early".utf8))
            let response = HTTPURLResponse(url: url, statusCode: 203, httpVersion: "HTTP/1.1", headerFields: [:])!
            client.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
        default:
            break
        }
        client.urlProtocolDidFinishLoading(self)
    }

    override func stopLoading() {}
}

/// The engine waits for a response head before it takes a body or an end: a protocol that never gave one left its
/// task waiting until the resource timeout (7 days by default), and its body was dropped.
@Suite("Protocols without a response")
struct ResponselessProtocolTests {
    private func session() -> URLSession {
        makeSession {
            $0.protocolClasses = [ResponselessProtocol.self]
            // Bounds the wait of the defect: the task used to end only by this timeout.
            $0.timeoutIntervalForResource = 10
        }
    }

    @Test(arguments: ["/body", "/empty"])
    func anEndWithoutAResponseCompletesTheTask(path: String) async throws {
        let session = session()
        defer { session.invalidateAndCancel() }
        let url = try #require(URL(string: "https://responseless.test\(path)"))
        let outcome = await session.runDataTask(URLRequest(url: url))
        #expect(outcome.error == nil)
        #expect(outcome.data == (path == "/body" ? Data("body".utf8) : Data()))
        #expect(outcome.response?.url == url)
        #expect(outcome.http == nil)
    }

    @Test func bodyLoadedBeforeTheResponseFollowsIt() async throws {
        let session = session()
        defer { session.invalidateAndCancel() }
        let url = try #require(URL(string: "https://responseless.test/late-response"))
        let outcome = await session.runDataTask(URLRequest(url: url))
        #expect(outcome.error == nil)
        #expect(outcome.http?.statusCode == 203)
        #expect(outcome.data == Data("early".utf8))
    }
}
