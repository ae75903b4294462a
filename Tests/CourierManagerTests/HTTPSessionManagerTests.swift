import Courier
import CourierManager
import CourierMockServer
import Foundation
import Testing

@Suite("Request serializers")
struct RequestSerializerTests {
    @Test func queryStringsFollowAFNetworkingsRules() {
        let query = HTTPRequestSerializer.queryString(
            from: [
                "b": "x y/z?", "a": ["k": 1, "j": [true, false]], "c": NSNull(), "d": "é&=+",
            ] as [String: Any])
        #expect(query == "a%5Bj%5D%5B%5D=1&a%5Bj%5D%5B%5D=0&a%5Bk%5D=1&b=x%20y/z?&c&d=%C3%A9%26%3D%2B")
    }

    @Test func getPutsParametersInTheURLAndPostInAFormBody() throws {
        var serializer = HTTPRequestSerializer()
        serializer.setAuthorizationHeaderField(username: "ada", password: "pw")
        serializer.timeoutInterval = 12
        let url = try #require(URL(string: "https://api.example/items?x=1"))
        let get = try serializer.request(method: "GET", url: url, parameters: ["page": 2])
        #expect(get.url?.absoluteString == "https://api.example/items?x=1&page=2")
        #expect(get.httpBody == nil)
        #expect(get.value(forHTTPHeaderField: "Authorization") == "Basic YWRhOnB3")
        #expect(get.timeoutInterval == 12)
        let post = try serializer.request(method: "POST", url: url, parameters: ["name": "a b"])
        #expect(post.url == url)
        #expect(post.httpBody == Data("name=a%20b".utf8))
        #expect(post.value(forHTTPHeaderField: "Content-Type") == "application/x-www-form-urlencoded")
        serializer.clearAuthorizationHeader()
        #expect(
            try serializer.request(method: "GET", url: url, parameters: nil).value(forHTTPHeaderField: "Authorization")
                == nil)
    }

    @Test func jsonBodiesAndInvalidJSONParameters() throws {
        let serializer = JSONRequestSerializer()
        let url = try #require(URL(string: "https://api.example/items"))
        let post = try serializer.request(method: "POST", url: url, parameters: ["n": 1])
        #expect(post.value(forHTTPHeaderField: "Content-Type") == "application/json")
        #expect(post.httpBody == Data(#"{"n":1}"#.utf8))
        #expect(throws: (any Error).self) {
            try serializer.request(method: "POST", url: url, parameters: ["d": Date()])
        }
        let get = try serializer.request(method: "GET", url: url, parameters: ["q": "s"])
        #expect(get.url?.absoluteString == "https://api.example/items?q=s")
    }
}

@Suite("HTTPSessionManager")
struct HTTPSessionManagerTests {
    private struct User: Codable, Sendable, Equatable {
        var id: Int
        var name: String
    }

    private func manager(_ server: MockServer) -> HTTPSessionManager {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.connectionProxyDictionary = [:]
        let manager = HTTPSessionManager(baseURL: server.url("/api"), sessionConfiguration: configuration)
        manager.completionQueue = DispatchQueue(label: "http-manager")
        return manager
    }

    @Test func verbsResolveAgainstTheBaseURLAndCallSuccessOrFailure() async throws {
        let server = MockServer()
        try await server.start()
        defer { Task { try? await server.shutdown() } }
        let json = MockResponse(
            headers: [("Content-Type", "application/json")], body: .data(Data(#"{"id":1,"name":"a"}"#.utf8)))
        server.route("/api/users", response: json)
        server.route("/api/missing", response: MockResponse(status: 404))
        let manager = manager(server)
        defer { manager.invalidateSessionCancelingTasks(true, resetSession: false) }
        #expect(manager.baseURL?.absoluteString.hasSuffix("/api/") == true)

        let name: String? = try await withCheckedThrowingContinuation { continuation in
            manager.GET(
                "users", parameters: ["page": 2], headers: ["X-Trace": "1"],
                success: { _, object in continuation.resume(returning: (object as? [String: Any])?["name"] as? String)
                },
                failure: { _, error in continuation.resume(throwing: error) })
        }
        #expect(name == "a")
        let sent = try #require(server.requests(path: "/api/users").first)
        #expect(sent.target == "/api/users?page=2")
        #expect(sent.header("X-Trace") == "1")

        let failed: (any Error)? = await withCheckedContinuation { continuation in
            manager.DELETE(
                "missing", success: { _, _ in continuation.resume(returning: nil) },
                failure: { task, error in
                    #expect(task != nil)
                    continuation.resume(returning: error)
                })
        }
        #expect((failed as NSError?)?.domain == ResponseSerializationError.domain)

        manager.requestSerializer = JSONRequestSerializer()
        _ = await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            manager.POST(
                "users", parameters: ["name": "b"], success: { _, _ in continuation.resume() },
                failure: { _, _ in continuation.resume() })
        }
        let posted = try #require(server.requests(path: "/api/users").last)
        #expect(posted.method == "POST" && posted.body == Data(#"{"name":"b"}"#.utf8))
    }

    @Test func aRequestThatCannotBeMadeFailsWithoutATask() async throws {
        let server = MockServer()
        try await server.start()
        defer { Task { try? await server.shutdown() } }
        let manager = manager(server)
        manager.requestSerializer = JSONRequestSerializer()
        defer { manager.invalidateSessionCancelingTasks(true, resetSession: false) }
        let outcome: (task: URLSessionDataTask?, made: Bool) = await withCheckedContinuation { continuation in
            let made = manager.POST(
                "users", parameters: ["when": Date()], success: { _, _ in },
                failure: { task, _ in continuation.resume(returning: (task, true)) })
            #expect(made == nil)
        }
        #expect(outcome.task == nil && outcome.made)
        #expect(server.requests.isEmpty)
    }

    @Test func theAsyncFormsDecode() async throws {
        let server = MockServer()
        try await server.start()
        defer { Task { try? await server.shutdown() } }
        server.route(
            "/api/users/1",
            response: MockResponse(
                headers: [("Content-Type", "application/json")], body: .data(Data(#"{"id":1,"name":"ada"}"#.utf8))))
        server.route(
            "/api/broken",
            response: MockResponse(headers: [("Content-Type", "application/json")], body: .data(Data("{".utf8))))
        let manager = manager(server)
        defer { manager.invalidateSessionCancelingTasks(true, resetSession: false) }
        #expect(try await manager.get("users/1", as: User.self) == User(id: 1, name: "ada"))
        await #expect(throws: (any Error).self) { try await manager.get("broken", as: User.self) }
    }
}
