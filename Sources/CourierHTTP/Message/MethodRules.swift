/// What the request method implies for sending it (RFC 9110 §9).
public enum MethodRules {
    /// The methods whose spelling a request normalises to upper case, as FoundationNetworking does.
    public static let normalizedMethods = ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT"]

    /// The method as `URLRequest.httpMethod` stores it: `GET`, `HEAD`, `POST`, `PUT`, `DELETE` and `CONNECT` in any
    /// case become upper case (`"get"` → `"GET"`); other methods are kept as given, since methods are case-sensitive
    /// (RFC 9110 §9.1).
    ///
    /// - Parameter method: The method an app set.
    public static func normalized(_ method: String) -> String {
        normalizedMethods.first { HeaderName.equal($0, method) } ?? method
    }

    /// Whether a request with `method` may be sent again without changing the outcome (RFC 9110 §9.2.2), so a
    /// client may retry it on a fresh connection when a reused one turned out to be closed.
    public static func isIdempotent(_ method: String) -> Bool {
        switch method.uppercased() {
        case "GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE": return true
        default: return false
        }
    }

    /// Whether an empty body is still announced with `Content-Length: 0` (RFC 9110 §8.6: a user agent should
    /// send it for methods that define a meaning for an enclosed content).
    public static func announcesEmptyBody(_ method: String) -> Bool {
        switch method.uppercased() {
        case "POST", "PUT", "PATCH": return true
        default: return false
        }
    }

    /// Whether a body of `length` bytes is announced with `Content-Length`: any body with bytes, and an empty one
    /// where ``announcesEmptyBody(_:)`` says so.
    public static func announcesBody(ofLength length: Int64, method: String) -> Bool {
        length > 0 || announcesEmptyBody(method)
    }

    /// Whether a request with `method` is refused when it carries a body: a `GET`. Darwin's HTTP loader (since iOS 13
    /// and macOS 10.15) fails it with `URLError.dataLengthExceedsMaximum` before sending, and FoundationNetworking does
    /// the same; apps and libraries (Alamofire validates it up front) expect that, not a request servers and proxies
    /// each treat their own way.
    public static func refusesBody(_ method: String) -> Bool {
        method == "GET"
    }

    /// The `Content-Type` a body with bytes goes with when the app gives none: `application/x-www-form-urlencoded`
    /// (the HTML form default) for a `POST`, as Darwin's loader sends it (also for upload tasks: a CFNetwork capture in
    /// Alamofire's issue 553, whose multipart uploads went out as forms until it set the type itself) and
    /// FoundationNetworking sends it for `httpBody` and streams; none for other methods.
    public static func defaultContentType(_ method: String) -> String? {
        method == "POST" ? "application/x-www-form-urlencoded" : nil
    }
}
