import Foundation

#if !canImport(Darwin)
    /// Linux has no CoreFoundation types in Swift. Trust and pinning code written for Darwin names a few of them
    /// (`data as CFData`, `var error: CFError?`, `host as CFString`, `options as CFDictionary`); these aliases of their Foundation bridges let
    /// that code compile unchanged against Courier's Security functions.
    public typealias CFData = Data
    /// See ``CFData``.
    public typealias CFString = String
    /// See ``CFData``.
    public typealias CFError = NSError
    /// See ``CFData``.
    public typealias CFArray = [Any]
    /// See ``CFData``.
    public typealias CFDictionary = NSDictionary
#endif
