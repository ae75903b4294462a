import Foundation

/// Where Courier keeps what outlives a process, by the XDG base directories: the cache under
/// `$XDG_CACHE_HOME/<application>/courier/` (default `~/.cache/<application>/courier/`), the cookie jar under
/// `$XDG_DATA_HOME/<application>/courier/` (default `~/.local/share/<application>/courier/`). A relative
/// `XDG_…` value is ignored, as the specification asks. The application is the main bundle's identifier, else the
/// executable's name.
package enum StoreLocation {
    package static func cacheFolder(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        base(environment["XDG_CACHE_HOME"], default: ".cache", environment: environment)
            .appendingPathComponent(applicationName).appendingPathComponent("courier")
    }

    package static func dataFolder(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        base(environment["XDG_DATA_HOME"], default: ".local/share", environment: environment)
            .appendingPathComponent(applicationName).appendingPathComponent("courier")
    }

    /// The folder of a cookie group every application naming `identifier` shares:
    /// `$XDG_DATA_HOME/courier/groups/<identifier>/`.
    package static func groupFolder(
        _ identifier: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> URL {
        sharedDataFolder("groups", environment: environment).appendingPathComponent(component(identifier))
    }

    /// A folder of Courier's own that does not depend on the application using it:
    /// `$XDG_DATA_HOME/courier/<name>/`.
    package static func sharedDataFolder(
        _ name: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> URL {
        base(environment["XDG_DATA_HOME"], default: ".local/share", environment: environment)
            .appendingPathComponent("courier").appendingPathComponent(component(name))
    }

    /// The folder name of this application.
    package static var applicationName: String {
        component(Bundle.main.bundleIdentifier ?? ProcessInfo.processInfo.processName)
    }

    /// `name` as one path component: no separators, never `.` or `..`.
    private static func component(_ name: String) -> String {
        let safe = name.replacingOccurrences(of: "/", with: "_")
        return safe.isEmpty || safe == "." || safe == ".." ? "courier-app" : safe
    }

    private static func base(_ value: String?, default relative: String, environment: [String: String]) -> URL {
        if let value, value.hasPrefix("/") { return URL(fileURLWithPath: value, isDirectory: true) }
        let home = environment["HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? NSHomeDirectory()
        return URL(fileURLWithPath: home, isDirectory: true).appendingPathComponent(relative)
    }
}
