import Foundation

extension NSURLRequest {
    /// Archives `request` with the keyed coder `aCoder` (see ``encode(with:)``).
    static func encodeRequest(_ request: URLRequest, with aCoder: NSCoder) {
        guard aCoder.allowsKeyedCoding else { return }
        aCoder.encode(request.url.map { NSURL(string: $0.absoluteString) } ?? nil, forKey: Key.url)
        aCoder.encode(
            request.mainDocumentURL.map { NSURL(string: $0.absoluteString) } ?? nil, forKey: Key.mainDocumentURL)
        aCoder.encode(Int(request.cachePolicy.rawValue), forKey: Key.cachePolicy)
        aCoder.encode(request.timeoutInterval, forKey: Key.timeoutInterval)
        aCoder.encode(NSString(string: request.httpMethod ?? "GET"), forKey: Key.httpMethod)
        let fields = request.headerFields.flatMap { [NSString(string: $0.name), NSString(string: $0.value)] }
        aCoder.encode(NSArray(array: fields), forKey: Key.headerFields)
        aCoder.encode(request.httpBody.map { NSData(data: $0) }, forKey: Key.httpBody)
        aCoder.encode(Int(request.networkServiceType.rawValue), forKey: Key.networkServiceType)
        aCoder.encode(Int(request.attribution.rawValue), forKey: Key.attribution)
        for (key, value) in Self.flags(of: request) {
            aCoder.encode(value, forKey: key)
        }
    }

    /// The request archived in `coder`, or `nil` when a value is missing or invalid.
    static func decodeRequest(from coder: NSCoder) -> URLRequest? {
        guard coder.allowsKeyedCoding, coder.containsValue(forKey: Key.cachePolicy),
            let cachePolicy = CachePolicy(rawValue: UInt(clamping: coder.decodeInteger(forKey: Key.cachePolicy))),
            let serviceType = NetworkServiceType(
                rawValue: UInt(clamping: coder.decodeInteger(forKey: Key.networkServiceType))),
            let attribution = URLRequest.Attribution(
                rawValue: UInt(clamping: coder.decodeInteger(forKey: Key.attribution))),
            let fields = coder.decodeObject(of: [NSArray.self, NSString.self], forKey: Key.headerFields) as? [String],
            fields.count.isMultiple(of: 2)
        else { return nil }
        var request = URLRequest(url: URL(fileURLWithPath: "/"))
        request.url = coder.decodeObject(of: NSURL.self, forKey: Key.url).map { $0 as URL }
        request.mainDocumentURL = coder.decodeObject(of: NSURL.self, forKey: Key.mainDocumentURL).map { $0 as URL }
        request.cachePolicy = cachePolicy
        request.timeoutInterval = coder.decodeDouble(forKey: Key.timeoutInterval)
        request.httpMethod = coder.decodeObject(of: NSString.self, forKey: Key.httpMethod).map { $0 as String }
        for index in stride(from: 0, to: fields.count, by: 2) {
            request.addValue(fields[index + 1], forHTTPHeaderField: fields[index])
        }
        request.httpBody = coder.decodeObject(of: NSData.self, forKey: Key.httpBody).map { $0 as Data }
        request.networkServiceType = serviceType
        request.attribution = attribution
        request.allowsCellularAccess = coder.decodeBool(forKey: Key.allowsCellularAccess)
        request.allowsExpensiveNetworkAccess = coder.decodeBool(forKey: Key.allowsExpensiveNetworkAccess)
        request.allowsConstrainedNetworkAccess = coder.decodeBool(forKey: Key.allowsConstrainedNetworkAccess)
        request.assumesHTTP3Capable = coder.decodeBool(forKey: Key.assumesHTTP3Capable)
        request.requiresDNSSECValidation = coder.decodeBool(forKey: Key.requiresDNSSECValidation)
        request.httpShouldHandleCookies = coder.decodeBool(forKey: Key.httpShouldHandleCookies)
        request.httpShouldUsePipelining = coder.decodeBool(forKey: Key.httpShouldUsePipelining)
        return request
    }

    private static func flags(of request: URLRequest) -> [(String, Bool)] {
        [
            (Key.allowsCellularAccess, request.allowsCellularAccess),
            (Key.allowsExpensiveNetworkAccess, request.allowsExpensiveNetworkAccess),
            (Key.allowsConstrainedNetworkAccess, request.allowsConstrainedNetworkAccess),
            (Key.assumesHTTP3Capable, request.assumesHTTP3Capable),
            (Key.requiresDNSSECValidation, request.requiresDNSSECValidation),
            (Key.httpShouldHandleCookies, request.httpShouldHandleCookies),
            (Key.httpShouldUsePipelining, request.httpShouldUsePipelining),
        ]
    }

    /// The archive's keys (FoundationNetworking's where it has one).
    private enum Key {
        static let url = "NS.url"
        static let mainDocumentURL = "NS.mainDocumentURL"
        static let cachePolicy = "NS._cachePolicy"
        static let timeoutInterval = "NS._timeoutInterval"
        static let httpMethod = "NS.httpMethod"
        static let headerFields = "courier.headerFields"
        static let httpBody = "courier.httpBody"
        static let networkServiceType = "NS._networkServiceType"
        static let attribution = "courier.attribution"
        static let allowsCellularAccess = "NS._allowsCellularAccess"
        static let allowsExpensiveNetworkAccess = "courier.allowsExpensiveNetworkAccess"
        static let allowsConstrainedNetworkAccess = "courier.allowsConstrainedNetworkAccess"
        static let assumesHTTP3Capable = "courier.assumesHTTP3Capable"
        static let requiresDNSSECValidation = "courier.requiresDNSSECValidation"
        static let httpShouldHandleCookies = "NS._httpShouldHandleCookies"
        static let httpShouldUsePipelining = "NS._httpShouldUsePipelining"
    }
}
