import Foundation

/// A task that returns the body in memory: through `urlSession(_:dataTask:didReceive:)` calls or a completion
/// handler.
open class URLSessionDataTask: URLSessionTask, @unchecked Sendable {}
