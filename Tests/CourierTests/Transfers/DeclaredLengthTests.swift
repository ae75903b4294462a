import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

/// A body stream whose app-set `Content-Length` is shorter than the stream: the request must never be whole on the
/// wire with a body other than the app's, since the server would act on it (and a keep-alive server would read the
/// rest as the next request). The task fails instead, and the server receives no complete request.
@Suite("Uploads: a body stream longer than its Content-Length")
struct DeclaredLengthTests {
    @Test func aStreamWithContentLengthZeroSendsNoEmptyRequest() async throws {
        try await withServer { server in
            server.route("/p", method: "POST", response: .status(201))
            var request = URLRequest(url: server.url("/p"))
            request.httpMethod = "POST"
            request.setValue("0", forHTTPHeaderField: "Content-Length")
            request.httpBodyStream = InputStream(data: Data("not empty".utf8))
            let outcome = await makeSession().runDataTask(request)
            #expect(outcome.urlError != nil)
            // Time for a request the server may have received to be recorded.
            try await Task.sleep(for: .milliseconds(200))
            #expect(server.requests(path: "/p").isEmpty)
        }
    }

    /// The bytes that would complete the declared length wait until the stream proves it has no more. The declared
    /// length is one read of the transport's (512 KiB), so the first read alone completes it.
    @Test func aStreamLongerThanItsContentLengthNeverCompletesTheRequest() async throws {
        try await withServer { server in
            server.route("/p", method: "POST", response: .status(201))
            let declared = 512 * 1024
            var request = URLRequest(url: server.url("/p"))
            request.httpMethod = "POST"
            request.setValue(String(declared), forHTTPHeaderField: "Content-Length")
            request.httpBodyStream = InputStream(data: MockBody.patternBytes(offset: 0, count: declared + 1_000))
            let outcome = await makeSession().runDataTask(request)
            #expect(outcome.urlError != nil)
            try await Task.sleep(for: .milliseconds(200))
            #expect(server.requests(path: "/p").isEmpty)
        }
    }

    /// A stream longer or shorter than its declared length fails with the code of a body stream that broke its
    /// request (`requestBodyStreamExhausted`, as for a failed read), and a description that says so. Before, both
    /// failed with `badURL`, a code that means the URL, and whose usual text is "unsupported URL".
    @Test(arguments: [512 * 1024 + 1_000, 1_000])
    func aStreamThatDisagreesWithItsContentLengthFailsClearly(streamLength: Int) async throws {
        try await withServer { server in
            server.route("/p", method: "POST", response: .status(201))
            let declared = 512 * 1024
            var request = URLRequest(url: server.url("/p"))
            request.httpMethod = "POST"
            request.setValue(String(declared), forHTTPHeaderField: "Content-Length")
            request.httpBodyStream = InputStream(data: MockBody.patternBytes(offset: 0, count: streamLength))
            let outcome = await makeSession { $0.timeoutIntervalForRequest = 30 }.runDataTask(request)
            #expect(outcome.urlError?.code == .requestBodyStreamExhausted)
            #expect(outcome.urlError?.localizedDescription.contains("Content-Length declares") == true)
        }
    }

    /// A stream exactly as long as its declared length still goes out whole.
    @Test func aStreamAsLongAsItsContentLengthIsSent() async throws {
        try await withServer { server in
            server.route("/p", method: "POST", response: .status(201))
            let body = MockBody.patternBytes(offset: 0, count: 512 * 1024)
            var request = URLRequest(url: server.url("/p"))
            request.httpMethod = "POST"
            request.setValue(String(body.count), forHTTPHeaderField: "Content-Length")
            request.httpBodyStream = InputStream(data: body)
            let outcome = await makeSession().runDataTask(request)
            #expect(outcome.http?.statusCode == 201)
            #expect(server.requests(path: "/p").first?.bodySHA256 == sha256Hex(body))
        }
    }
}
