import Courier
import CourierMockServer
import Foundation
import OTel
import Tracing

/// Downloads a file through two redirects from a local server, inside a span of its own, with swift-otel
/// bootstrapped: the download's client span (with its redirect events) is the child of that span, and the server
/// receives the `traceparent` of the client span on every request.
@main
struct ObservedDownload {
    static func main() async throws {
        // The OTEL_* environment variables configure the exporters (see README.md).
        let observability = try OTel.bootstrap()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await observability.run() }
            try await download()
            // Time for the batch exporters to send what they hold.
            try await Task.sleep(for: .seconds(3))
            group.cancelAll()
        }
    }

    static func download() async throws {
        let server = MockServer()
        try await server.start()
        server.route("/start", response: MockResponse(status: 302, headers: [("Location", "/middle")]))
        server.route("/middle", response: MockResponse(status: 301, headers: [("Location", "/file.bin")]))
        server.route("/file.bin", response: MockResponse(body: .pattern(length: 1_000_000)))
        let session = URLSession(configuration: .default)
        try await withSpan("download with redirects") { span in
            let (file, response) = try await session.download(from: server.url("/start"))
            let size = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) ?? 0
            span.attributes["example.bytes"] = size
            print("downloaded \(size) bytes from \(response.url?.absoluteString ?? "?")")
            try? FileManager.default.removeItem(at: file)
        }
        for request in server.requests {
            print("the server got \(request.path) with traceparent \(request.header("traceparent") ?? "none")")
        }
        session.finishTasksAndInvalidate()
        try await server.shutdown()
    }
}
