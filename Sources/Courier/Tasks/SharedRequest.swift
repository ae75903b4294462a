/// A request held by reference, so that a task and its engine share one copy: `URLRequest` is over a hundred bytes
/// inline, and both keep the request the task started with (the task as its `originalRequest`).
final class SharedRequest: Sendable {
    let request: URLRequest

    init(_ request: URLRequest) {
        self.request = request
    }
}
