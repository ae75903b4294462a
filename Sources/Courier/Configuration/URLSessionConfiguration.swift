import CourierHTTP
import Foundation
import NIOConcurrencyHelpers

/// The configuration of a `URLSession`: its timeouts, caching, cookie and credential policies, and headers.
///
/// Create one with ``default``, ``ephemeral`` or ``background(withIdentifier:)`` (each call returns a new object),
/// adjust it, and pass it to a session, which keeps its own copy. Accessors are thread-safe. ``copy(with:)``
/// returns an independent configuration whose properties hold the same values; the cookie storage, credential
/// storage and cache are shared by reference, as on Apple platforms.
open class URLSessionConfiguration: NSObject, NSCopying, @unchecked Sendable {
    /// Every configurable value, kept behind one lock.
    private struct Settings {
        var identifier: String? = nil
        var requestCachePolicy: URLRequest.CachePolicy = .useProtocolCachePolicy
        var timeoutIntervalForRequest: TimeInterval = 60
        var timeoutIntervalForResource: TimeInterval = 604_800
        var networkServiceType: URLRequest.NetworkServiceType = .default
        var allowsCellularAccess: Bool = true
        var allowsExpensiveNetworkAccess: Bool = true
        var allowsConstrainedNetworkAccess: Bool = true
        var requiresDNSSECValidation: Bool = false
        var waitsForConnectivity: Bool = false
        var isDiscretionary: Bool = false
        var sharedContainerIdentifier: String? = nil
        var sessionSendsLaunchEvents: Bool = false
        var connectionProxyDictionary: [AnyHashable: Any]? = nil
        var tlsMinimumSupportedProtocolVersion: tls_protocol_version_t = .TLSv12
        var tlsMaximumSupportedProtocolVersion: tls_protocol_version_t = .TLSv13
        var httpShouldUsePipelining: Bool = false
        var httpShouldSetCookies: Bool = true
        var httpCookieAcceptPolicy: HTTPCookie.AcceptPolicy = .onlyFromMainDocumentDomain
        var httpAdditionalHeaders: [AnyHashable: Any]? = nil
        var httpMaximumConnectionsPerHost: Int = 6
        var httpCookieStorage: HTTPCookieStorage? = nil
        var urlCredentialStorage: URLCredentialStorage? = nil
        var urlCache: URLCache? = nil
        var shouldUseExtendedBackgroundIdleMode: Bool = false
        var protocolClasses: [AnyClass]? = []
        var multipathServiceType: URLSessionConfiguration.MultipathServiceType = .none
        var usesClassicLoadingMode: Bool = true
        var courierAdditionalTrustedCertificates: [Data] = []
        var courierDownloadDirectory: URL? = nil
        var courierMaximumDecompressionRatio: Int? = ContentCoding.defaultMaximumDecompressionRatio
        var courierTelemetry = CourierTelemetry()
        var courierAllowsHTTP2 = true
        var backgroundEnvironment: [String: String]? = nil
        var proxyEnvironment: [String: String]? = nil
        var courierBackgroundLaunchCommand: [String]? = nil
    }

    private let settings: NIOLockedValueBox<Settings>

    private init(settings: Settings) {
        self.settings = NIOLockedValueBox(settings)
        super.init()
    }

    /// Creates a configuration with the default settings.
    @available(*, deprecated, message: "Use URLSessionConfiguration.default or another class property instead.")
    public override convenience init() {
        self.init(settings: Self.defaultSettings())
    }

    /// A new configuration with the default settings: shared cookie storage, credential storage and cache.
    open class var `default`: URLSessionConfiguration {
        URLSessionConfiguration(settings: defaultSettings())
    }

    /// A new configuration that keeps no data beyond the session: its cookie storage, credential storage and cache
    /// are new in-memory objects of its own. It never reads the user's stored cookies or credentials: the shared
    /// stores are not made for it.
    open class var ephemeral: URLSessionConfiguration {
        // Not from `defaultSettings()`: the shared stores are not even made (see `SharedStoreUse`).
        var settings = Settings()
        settings.httpCookieStorage = HTTPCookieStorage()
        settings.urlCredentialStorage = URLCredentialStorage()
        settings.urlCache = URLCache(memoryCapacity: 4 * 1024 * 1024, diskCapacity: 0)
        return URLSessionConfiguration(settings: settings)
    }

    /// A new configuration for background transfers.
    ///
    /// A session made with it hands its download tasks (and uploads from a file) to `courierd`, the per-user
    /// background-transfer daemon, which carries them on while the app is suspended, exits or crashes, and hands
    /// their events to the next session created with the same identifier, as `nsurlsessiond` does on Darwin. The
    /// library starts the daemon when none runs. As on Darwin, data tasks, uploads from data or a stream, and
    /// completion handlers are refused (the task fails with `URLError.unsupportedURL` saying so), and one process at
    /// a time may use an identifier (`URLError.backgroundSessionInUseByAnotherProcess`).
    ///
    /// - Parameter identifier: The unique identifier of the background session.
    open class func background(withIdentifier identifier: String) -> URLSessionConfiguration {
        var settings = Settings()
        settings.httpCookieStorage = HTTPCookieStorage.shared
        settings.urlCredentialStorage = URLCredentialStorage.shared
        // No cache, as Apple documents for background sessions: their transfers neither read nor fill one, and
        // `URLSession.reset` of such a session must not empty `URLCache.shared`, which the app's other sessions use.
        // (`URLCache.shared` is not made for it.)
        settings.identifier = identifier
        settings.sessionSendsLaunchEvents = true
        return URLSessionConfiguration(settings: settings)
    }

    private static func defaultSettings() -> Settings {
        var settings = Settings()
        settings.httpCookieStorage = HTTPCookieStorage.shared
        settings.urlCredentialStorage = URLCredentialStorage.shared
        settings.urlCache = URLCache.shared
        return settings
    }

    /// Returns an independent configuration with the same values.
    ///
    /// - Parameter zone: Ignored.
    open func copy(with zone: NSZone? = nil) -> Any {
        URLSessionConfiguration(settings: settings.withLockedValue { $0 })
    }

    /// Returns an independent configuration with the same values (see ``copy(with:)``).
    open override func copy() -> Any {
        copy(with: nil)
    }

    /// The identifier of a background configuration, or `nil`.
    open var identifier: String? { settings.withLockedValue { $0.identifier } }

    /// The default cache policy of the session's requests. Defaults to ``URLRequest/CachePolicy/useProtocolCachePolicy``.
    open var requestCachePolicy: URLRequest.CachePolicy {
        get { settings.withLockedValue { $0.requestCachePolicy } }
        set { settings.withLockedValue { $0.requestCachePolicy = newValue } }
    }

    /// How long, in seconds, a task waits for additional data before timing out. Defaults to 60.
    open var timeoutIntervalForRequest: TimeInterval {
        get { settings.withLockedValue { $0.timeoutIntervalForRequest } }
        set { settings.withLockedValue { $0.timeoutIntervalForRequest = newValue } }
    }

    /// The most time, in seconds, a resource request may take. Defaults to 604,800 (seven days).
    open var timeoutIntervalForResource: TimeInterval {
        get { settings.withLockedValue { $0.timeoutIntervalForResource } }
        set { settings.withLockedValue { $0.timeoutIntervalForResource = newValue } }
    }

    /// The kind of traffic the session carries. Recorded only. Defaults to ``URLRequest/NetworkServiceType/default``.
    open var networkServiceType: URLRequest.NetworkServiceType {
        get { settings.withLockedValue { $0.networkServiceType } }
        set { settings.withLockedValue { $0.networkServiceType = newValue } }
    }

    /// Whether connections may use a cellular network. Recorded only (Linux has no such restriction). Defaults to `true`.
    open var allowsCellularAccess: Bool {
        get { settings.withLockedValue { $0.allowsCellularAccess } }
        set { settings.withLockedValue { $0.allowsCellularAccess = newValue } }
    }

    /// Whether connections may use an expensive network interface. Recorded only. Defaults to `true`.
    open var allowsExpensiveNetworkAccess: Bool {
        get { settings.withLockedValue { $0.allowsExpensiveNetworkAccess } }
        set { settings.withLockedValue { $0.allowsExpensiveNetworkAccess = newValue } }
    }

    /// Whether connections may use a network interface in Low Data Mode. Recorded only. Defaults to `true`.
    open var allowsConstrainedNetworkAccess: Bool {
        get { settings.withLockedValue { $0.allowsConstrainedNetworkAccess } }
        set { settings.withLockedValue { $0.allowsConstrainedNetworkAccess = newValue } }
    }

    /// Whether name resolution must be validated with DNSSEC. Recorded only. Defaults to `false`.
    open var requiresDNSSECValidation: Bool {
        get { settings.withLockedValue { $0.requiresDNSSECValidation } }
        set { settings.withLockedValue { $0.requiresDNSSECValidation = newValue } }
    }

    /// Whether tasks wait for connectivity instead of failing at once when no network path leads to the host (network
    /// unreachable, no route, an `http+unix` socket not there yet). Defaults to `false`. A waiting task tells its
    /// delegate once (`urlSession(_:taskIsWaitingForConnectivity:)`) and tries again, 0.25 s apart doubling to 8 s,
    /// until it connects or `timeoutIntervalForResource` ends it; a refused connection or an unknown name fails at
    /// once, as on Darwin with the network up.
    open var waitsForConnectivity: Bool {
        get { settings.withLockedValue { $0.waitsForConnectivity } }
        set { settings.withLockedValue { $0.waitsForConnectivity = newValue } }
    }

    /// Whether background tasks may be scheduled at the system's discretion. Defaults to `false`. In a background
    /// session `courierd` starts discretionary tasks after the others; other sessions record it only (Linux has no
    /// system scheduler that waits for power or Wi-Fi).
    open var isDiscretionary: Bool {
        get { settings.withLockedValue { $0.isDiscretionary } }
        set { settings.withLockedValue { $0.isDiscretionary = newValue } }
    }

    /// The identifier of the shared container background downloads are placed in. Recorded only. Defaults to `nil`.
    open var sharedContainerIdentifier: String? {
        get { settings.withLockedValue { $0.sharedContainerIdentifier } }
        set { settings.withLockedValue { $0.sharedContainerIdentifier = newValue } }
    }

    /// Whether the app is launched when background tasks finish while it is not running. Defaults to `true` for
    /// background configurations and `false` otherwise. Linux has no app launcher: `courierd` runs
    /// ``courierBackgroundLaunchCommand`` instead, when the session names one (without it, the events wait for the
    /// next session with the identifier).
    open var sessionSendsLaunchEvents: Bool {
        get { settings.withLockedValue { $0.sessionSendsLaunchEvents } }
        set { settings.withLockedValue { $0.sessionSendsLaunchEvents = newValue } }
    }

    /// The proxy settings of the session's connections, with Darwin's keys, or `nil`. Defaults to `nil`.
    ///
    /// `HTTPEnable`/`HTTPProxy`/`HTTPPort` and `HTTPSEnable`/`HTTPSProxy`/`HTTPSPort` name HTTP proxies (`http`
    /// requests in absolute form, `https` ones through a `CONNECT` tunnel), `SOCKSEnable`/`SOCKSProxy`/`SOCKSPort` a
    /// SOCKS5 proxy (credentials under `kCFStreamPropertySOCKSUser`/`kCFStreamPropertySOCKSPassword`);
    /// `ExceptionsList` and `ExcludeSimpleHostnames` name the hosts that go direct. Automatic configuration
    /// (`ProxyAutoConfigEnable`, `ProxyAutoDiscoveryEnable`) is not done: such a session's tasks fail with
    /// `URLError.unsupportedURL` rather than send directly what was meant for a proxy. When `nil`, the session reads
    /// the `http_proxy`, `https_proxy`, `all_proxy` and `no_proxy` environment variables, as curl does (Darwin uses
    /// the system's settings instead); `[:]` means no proxy at all.
    open var connectionProxyDictionary: [AnyHashable: Any]? {
        get { settings.withLockedValue { $0.connectionProxyDictionary } }
        set { settings.withLockedValue { $0.connectionProxyDictionary = newValue } }
    }

    /// The lowest TLS version the session's connections accept. Defaults to ``tls_protocol_version_t/TLSv12``.
    /// A DTLS version (a datagram protocol, which HTTPS connections do not speak) is replaced by the default.
    open var tlsMinimumSupportedProtocolVersion: tls_protocol_version_t {
        get { settings.withLockedValue { $0.tlsMinimumSupportedProtocolVersion } }
        set { settings.withLockedValue { $0.tlsMinimumSupportedProtocolVersion = newValue } }
    }

    /// The highest TLS version the session's connections offer. Defaults to ``tls_protocol_version_t/TLSv13``.
    /// A DTLS version is replaced by the default.
    open var tlsMaximumSupportedProtocolVersion: tls_protocol_version_t {
        get { settings.withLockedValue { $0.tlsMaximumSupportedProtocolVersion } }
        set { settings.withLockedValue { $0.tlsMaximumSupportedProtocolVersion = newValue } }
    }

    /// Whether the session's requests use HTTP pipelining. Recorded only: Courier never pipelines (an HTTP/1.1
    /// connection carries one request at a time; HTTP/2 multiplexes instead). Apple documents the setting as a hint
    /// that does not guarantee pipelining. Defaults to `false`.
    open var httpShouldUsePipelining: Bool {
        get { settings.withLockedValue { $0.httpShouldUsePipelining } }
        set { settings.withLockedValue { $0.httpShouldUsePipelining = newValue } }
    }

    /// Whether requests get cookies from ``httpCookieStorage`` and responses' cookies are stored there. Defaults to `true`.
    open var httpShouldSetCookies: Bool {
        get { settings.withLockedValue { $0.httpShouldSetCookies } }
        set { settings.withLockedValue { $0.httpShouldSetCookies = newValue } }
    }

    /// Which cookies the session accepts. Defaults to ``HTTPCookie/AcceptPolicy/onlyFromMainDocumentDomain``.
    open var httpCookieAcceptPolicy: HTTPCookie.AcceptPolicy {
        get { settings.withLockedValue { $0.httpCookieAcceptPolicy } }
        set { settings.withLockedValue { $0.httpCookieAcceptPolicy = newValue } }
    }

    /// Header fields added to every request that does not set them itself, or `nil`. Defaults to `nil`.
    ///
    /// Keys and values should be strings. The reserved fields `Connection`, `Host`, `Proxy-Authenticate`,
    /// `Proxy-Authorization` and `WWW-Authenticate` are ignored. `Authorization`, on Apple's list too, is sent as
    /// Darwin and FoundationNetworking send it (a session-wide bearer token); a request's own value wins, a
    /// credential that answers a challenge replaces it, and it never follows a redirect to another origin.
    open var httpAdditionalHeaders: [AnyHashable: Any]? {
        get { settings.withLockedValue { $0.httpAdditionalHeaders } }
        set { settings.withLockedValue { $0.httpAdditionalHeaders = newValue } }
    }

    /// The most simultaneous connections to one host. Defaults to 6.
    open var httpMaximumConnectionsPerHost: Int {
        get { settings.withLockedValue { $0.httpMaximumConnectionsPerHost } }
        set { settings.withLockedValue { $0.httpMaximumConnectionsPerHost = newValue } }
    }

    /// The cookie storage of the session, or `nil` for no cookies. Defaults to ``HTTPCookieStorage/shared``; an ephemeral configuration gets a new private storage.
    open var httpCookieStorage: HTTPCookieStorage? {
        get { settings.withLockedValue { $0.httpCookieStorage } }
        set { settings.withLockedValue { $0.httpCookieStorage = newValue } }
    }

    /// The credential storage of the session, or `nil` for none. Defaults to ``URLCredentialStorage/shared``; an ephemeral configuration gets a new private storage.
    open var urlCredentialStorage: URLCredentialStorage? {
        get { settings.withLockedValue { $0.urlCredentialStorage } }
        set { settings.withLockedValue { $0.urlCredentialStorage = newValue } }
    }

    /// The response cache of the session, or `nil` for none. Defaults to ``URLCache/shared``; an ephemeral configuration
    /// gets a new in-memory cache, and a background one none (as on Darwin). Data and upload tasks store storable
    /// responses in it and are answered from it by the rules of RFC 9111 and the request's `cachePolicy`.
    open var urlCache: URLCache? {
        get { settings.withLockedValue { $0.urlCache } }
        set { settings.withLockedValue { $0.urlCache = newValue } }
    }

    /// Whether connections stay open when the app moves to the background. Recorded only. Defaults to `false`.
    open var shouldUseExtendedBackgroundIdleMode: Bool {
        get { settings.withLockedValue { $0.shouldUseExtendedBackgroundIdleMode } }
        set { settings.withLockedValue { $0.shouldUseExtendedBackgroundIdleMode = newValue } }
    }

    /// The extra protocol classes that handle requests, or `nil`. Defaults to an empty array: Courier's built-in HTTP support is not a protocol class.
    /// A class that is not a `URLProtocol` subclass is skipped.
    open var protocolClasses: [AnyClass]? {
        get { settings.withLockedValue { $0.protocolClasses } }
        set { settings.withLockedValue { $0.protocolClasses = newValue } }
    }

    /// The Multipath TCP service type. Recorded only. Defaults to ``MultipathServiceType-swift.enum/none``.
    open var multipathServiceType: URLSessionConfiguration.MultipathServiceType {
        get { settings.withLockedValue { $0.multipathServiceType } }
        set { settings.withLockedValue { $0.multipathServiceType = newValue } }
    }

    /// Whether the session uses the classic loading mode. Recorded only. Defaults to `true`.
    open var usesClassicLoadingMode: Bool {
        get { settings.withLockedValue { $0.usesClassicLoadingMode } }
        set { settings.withLockedValue { $0.usesClassicLoadingMode = newValue } }
    }

    // MARK: - Courier extensions (not in Apple's API)

    /// Courier extension: where download tasks write their temporary files and keep partial files for resume
    /// data. The default is `$XDG_CACHE_HOME/courier/downloads` (`~/.cache/courier/downloads`; without a home
    /// folder, `courier-<uid>` in `TMPDIR`).
    ///
    /// A background session's downloads are written by `courierd` in a folder of its own instead (see the README's
    /// Background sessions), and handed to `didFinishDownloadingTo` from there.
    ///
    /// The folder must be private: Courier creates it with mode 0700, and refuses (failing the download with
    /// `URLError.cannotCreateFile`) an existing folder that is a symbolic link, belongs to another user or can be
    /// written by group or others. Files in it are created with mode 0600. Partial files kept for resume data and
    /// not resumed within 7 days are deleted when a session using the folder is created.
    public var courierDownloadDirectory: URL {
        get {
            settings.withLockedValue { $0.courierDownloadDirectory } ?? DownloadDirectory.defaultFolder
        }
        set { settings.withLockedValue { $0.courierDownloadDirectory = newValue } }
    }

    /// Courier extension: the command `courierd` runs when a task of this background session ends while no process
    /// has the session open and ``sessionSendsLaunchEvents`` is `true` — Linux's stand-in for Darwin relaunching the
    /// app: the command (an absolute executable path, then its arguments) is expected to create a session with the
    /// same identifier and a delegate, which then receives the waiting events. Started detached, with the daemon's
    /// environment, at most once until a process attaches to the session. Defaults to `nil` (the events wait).
    public var courierBackgroundLaunchCommand: [String]? {
        get { settings.withLockedValue { $0.courierBackgroundLaunchCommand } }
        set { settings.withLockedValue { $0.courierBackgroundLaunchCommand = newValue } }
    }

    /// The environment a background session reads its folders and `COURIERD_PATH` from, and starts `courierd`
    /// with (the process's when `nil`): tests give each session a daemon and folders of its own.
    package var backgroundEnvironment: [String: String]? {
        get { settings.withLockedValue { $0.backgroundEnvironment } }
        set { settings.withLockedValue { $0.backgroundEnvironment = newValue } }
    }

    /// The proxy variables (`http_proxy`, `no_proxy`…) a session without a ``connectionProxyDictionary`` reads
    /// instead of the process's environment: `courierd` runs an app's background tasks with the app's, not its own.
    package var proxyEnvironment: [String: String]? {
        get { settings.withLockedValue { $0.proxyEnvironment } }
        set { settings.withLockedValue { $0.proxyEnvironment = newValue } }
    }

    /// Courier extension: DER-encoded certificates trusted in addition to the system's trust store when
    /// evaluating servers' TLS certificates (a private CA, or a test server's self-signed certificate).
    public var courierAdditionalTrustedCertificates: [Data] {
        get { settings.withLockedValue { $0.courierAdditionalTrustedCertificates } }
        set { settings.withLockedValue { $0.courierAdditionalTrustedCertificates = newValue } }
    }

    /// Courier extension: the decompression-bomb guard. A gzip, deflate or brotli response body that the session
    /// decodes may grow to at most this many times the compressed bytes received; a body that grows further fails
    /// its task with `URLError.cannotDecodeContentData`. `nil` turns the guard off.
    ///
    /// The default, 1,000, is just under what deflate can reach at all (about 1,032:1; brotli goes far beyond):
    /// real content (text, JSON, HTML) stays far below it, while a body that is almost entirely one repeated
    /// byte — the shape of a decompression bomb — does. An app that buffers whole bodies from servers it does not
    /// trust may want a lower value; one that downloads such data on purpose, a higher one or `nil`. Values below
    /// 1 are treated as 1.
    public var courierMaximumDecompressionRatio: Int? {
        get { settings.withLockedValue { $0.courierMaximumDecompressionRatio } }
        set { settings.withLockedValue { $0.courierMaximumDecompressionRatio = newValue.map { max(1, $0) } } }
    }

    /// Courier extension: where the session's spans, metrics and log lines go, and what they carry (see
    /// ``CourierTelemetry``). By default, the process's bootstrapped tracer and metrics factory; nothing is recorded
    /// when none was bootstrapped. The transfers of a background session run in `courierd`, another process, and are
    /// not recorded in the app's telemetry.
    public var courierTelemetry: CourierTelemetry {
        get { settings.withLockedValue { $0.courierTelemetry } }
        set { settings.withLockedValue { $0.courierTelemetry = newValue } }
    }

    /// Courier extension: whether HTTPS connections offer HTTP/2 (ALPN `h2`) besides HTTP/1.1. The default, `true`,
    /// lets the server choose, as Darwin does; `false` offers only `http/1.1`, for servers whose HTTP/2 misbehaves
    /// or to compare the two (the `courier` tool's `--http1.1`). Plain `http` connections always speak HTTP/1.1:
    /// Courier does not upgrade them to cleartext HTTP/2 (`h2c`), and neither does Darwin.
    public var courierAllowsHTTP2: Bool {
        get { settings.withLockedValue { $0.courierAllowsHTTP2 } }
        set { settings.withLockedValue { $0.courierAllowsHTTP2 = newValue } }
    }
}
