import Foundation

extension URLRequest: ReferenceConvertible {
    /// The reference type a request bridges to: ``NSURLRequest``.
    public typealias ReferenceType = NSURLRequest

    /// The class a request bridges to (part of the bridging protocol; not meant to be called directly).
    public static func _getObjectiveCType() -> Any.Type {
        NSURLRequest.self
    }

    /// Returns an immutable ``NSURLRequest`` holding a copy of this request (part of the bridging protocol; use
    /// `NSURLRequest(request)` or `request as NSURLRequest` where available).
    public func _bridgeToObjectiveC() -> NSURLRequest {
        NSURLRequest(request: self)
    }

    /// Sets `result` to a copy of `input`'s request (part of the bridging protocol).
    public static func _forceBridgeFromObjectiveC(_ input: NSURLRequest, result: inout URLRequest?) {
        result = input.request
    }

    /// Sets `result` to a copy of `input`'s request and returns `true`: every ``NSURLRequest`` bridges (part of
    /// the bridging protocol).
    public static func _conditionallyBridgeFromObjectiveC(_ input: NSURLRequest, result: inout URLRequest?) -> Bool {
        result = input.request
        return true
    }

    /// Returns a copy of `source`'s request (part of the bridging protocol). Unlike FoundationNetworking, which
    /// traps, a `nil` source gives a request whose ``url`` is `nil`.
    public static func _unconditionallyBridgeFromObjectiveC(_ source: NSURLRequest?) -> URLRequest {
        if let source { return source.request }
        var empty = URLRequest(url: URL(fileURLWithPath: "/"))
        empty.url = nil
        return empty
    }
}
