import Foundation

/// The cookie file that FoundationNetworking's `HTTPCookieStorage.shared` keeps, read once so that an app switching
/// to Courier keeps its cookies.
///
/// FoundationNetworking writes `$XDG_DATA_HOME/<bundle name>/.cookies.shared` (`~/.local/share/…` without
/// `XDG_DATA_HOME`), where the bundle name is the last component of `Bundle.main.bundlePath` without its extension (for
/// a command-line tool, the name of the directory holding the executable). The file is a property list: a dictionary
/// from a key to each cookie's properties, with `Expires` as seconds since 1970.
///
/// Courier only reads the file; it never writes or deletes it.
enum FoundationCookieFile {
    /// Files larger than this are ignored: a cookie jar is small, and reading is done on the caller's thread.
    static let maximumBytes = 8 << 20

    /// The path FoundationNetworking uses, or `nil` when no bundle name or home directory can be found.
    ///
    /// - Parameters:
    ///   - environment: The process environment (`XDG_DATA_HOME` is read; a relative value is ignored, as the XDG
    ///     base directory specification asks).
    ///   - bundlePath: `Bundle.main.bundlePath`.
    ///   - homeDirectory: The user's home directory.
    static func path(environment: [String: String], bundlePath: String, homeDirectory: String) -> String? {
        var bundleName = bundlePath.split(separator: "/").last.map(String.init) ?? ""
        if let dot = bundleName.lastIndex(of: ".") {
            bundleName = String(bundleName[..<dot])
        }
        guard !bundleName.isEmpty else { return nil }
        let dataHome: String
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
            dataHome = xdg
        } else if homeDirectory.hasPrefix("/") {
            dataHome = homeDirectory + "/.local/share"
        } else {
            return nil
        }
        return dataHome + "/" + bundleName + "/.cookies.shared"
    }

    /// The path for this process.
    static func defaultPath() -> String? {
        path(
            environment: ProcessInfo.processInfo.environment, bundlePath: Bundle.main.bundlePath,
            homeDirectory: NSHomeDirectory())
    }

    /// Reads the cookies of the file at `path` that have not expired at `now`.
    ///
    /// - Returns: The cookies, or none when the file is missing, too large, or not a property list of cookies.
    ///   Entries that do not make a valid cookie are skipped.
    static func load(path: String, now: Date) -> [HTTPCookie] {
        guard let handle = FileHandle(forReadingAtPath: path) else { return [] }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: maximumBytes + 1), data.count <= maximumBytes else { return [] }
        return cookies(from: data, now: now)
    }

    /// Decodes FoundationNetworking's property list.
    static func cookies(from data: Data, now: Date) -> [HTTPCookie] {
        guard let plist = try? PropertyListSerialization.propertyList(from: data, format: nil),
            let entries = plist as? [String: Any]
        else { return [] }
        let cookies = entries.sorted { $0.key < $1.key }.compactMap { entry -> HTTPCookie? in
            guard let stored = entry.value as? [String: Any] else { return nil }
            return cookie(from: stored)
        }
        return cookies.filter { !$0.isExpired(at: now) }
    }

    private static func cookie(from stored: [String: Any]) -> HTTPCookie? {
        var properties: [HTTPCookiePropertyKey: Any] = [:]
        for (key, value) in stored {
            let property = HTTPCookiePropertyKey(rawValue: key)
            if property == .expires {
                guard let seconds = seconds(value) else { continue }
                properties[.expires] = Date(timeIntervalSince1970: seconds)
            } else {
                properties[property] = value
            }
        }
        return HTTPCookie(properties: properties)
    }

    private static func seconds(_ value: Any) -> TimeInterval? {
        switch value {
        case let double as Double: return double.isFinite ? double : nil
        case let integer as Int: return TimeInterval(integer)
        case let number as NSNumber: return number.doubleValue.isFinite ? number.doubleValue : nil
        default: return nil
        }
    }
}
