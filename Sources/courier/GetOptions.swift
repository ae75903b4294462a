import ArgumentParser
import CourierHTTP
import Foundation

/// Where bodies go and what is shown: `-o`, `-O`, `--output-dir`, `-C`, `-i`, `-I`, `-s`, `-S`, `-v`, `-w`.
struct OutputOptions: ParsableArguments {
    @Option(
        name: [.customShort("o"), .customLong("output")],
        help: ArgumentHelp(
            "Write the body of the n-th URL to this file ('-' for standard output). Repeatable, one per URL.",
            discussion: """
                The file appears complete or not at all: the body is written to a private file beside it and renamed \
                over it at the end, so an existing file is replaced in one step or left untouched.
                """, valueName: "file"))
    var output: [String] = []

    @Flag(
        name: [.customShort("O"), .customLong("remote-name")],
        help: ArgumentHelp(
            "Save every URL to a file named after the URL's last path component (cannot be mixed with -o).",
            discussion: """
                The name is reduced to a plain file name in the current folder (or --output-dir): never a path, \
                never hidden (a leading dot becomes '_'), 'index.html' when the URL ends with '/'.
                """))
    var remoteName = false

    @Flag(
        name: [.customShort("J"), .customLong("remote-header-name")],
        help: ArgumentHelp(
            "With -O, take the name from the server (Content-Disposition, URLResponse.suggestedFilename).",
            discussion: """
                Reduced like -O's names, and never replacing an existing file (the transfer then fails with \
                status 23): the server chooses the name. With -C - the URL's name is used. Not with -i or -I, \
                which write the body before the name is known.
                """))
    var remoteHeaderName = false

    @Option(name: .customLong("output-dir"), help: ArgumentHelp("The folder for -o and -O files.", valueName: "dir"))
    var outputDirectory: String?

    @Option(
        name: [.customShort("C"), .customLong("continue-at")],
        help: ArgumentHelp(
            "'-': continue an interrupted download of the same file (needs -o or -O).",
            discussion: """
                An interrupted download (dropped connection, Ctrl-C, or a failure after --retry) keeps its bytes in a \
                private folder beside the file and Courier's resume data in FILE.courier-partial. The next run with \
                -C - asks the server for the rest (Range with If-Range), and starts over cleanly when the file \
                changed on the server or ranges are not supported. A server must name the version it sent: a strong \
                ETag, or a Last-Modified at least 60 s before its Date; without one nothing is kept to continue. \
                Only '-' (find the offset) is accepted.
                """, valueName: "-"))
    var continueAt: String?

    @Flag(
        name: [.customShort("i"), .customLong("include")], help: "Write the status line and headers before the body.")
    var includeHeaders = false

    @Flag(name: [.customShort("I"), .customLong("head")], help: "Send HEAD and write the status line and headers.")
    var head = false

    @Flag(name: [.customShort("s"), .customLong("silent")], help: "No progress and no error messages.")
    var silent = false

    @Flag(name: [.customShort("S"), .customLong("show-error")], help: "With -s, still show error messages.")
    var showError = false

    @Flag(name: .customLong("no-progress-meter"), help: "No progress display, but error messages.")
    var noProgressMeter = false

    @Flag(
        name: [.customShort("v"), .customLong("verbose")],
        help: ArgumentHelp(
            "Show each request and response head, the TLS version, the server's certificate and the timings on "
                + "standard error (when each transfer ends; credentials are masked)."))
    var verbose = false

    @Option(
        name: [.customShort("w"), .customLong("write-out")],
        help: ArgumentHelp(
            "After each transfer, write this template to standard output.",
            discussion: "Variables: "
                + TransferReport.variables.map { "%{\($0)}" }.joined(separator: ", ")
                + ". Escapes: \\n, \\r, \\t, \\\\ and %%.", valueName: "format"))
    var writeOut: String?

    @Flag(
        name: [.customShort("f"), .customLong("fail")],
        help: "Exit with status 22 and write no body when the server answers 400 or above.")
    var failOnHTTPError = false
}

/// What is sent: method, headers, body, credentials, cookies, redirects, timeouts.
struct RequestOptions: ParsableArguments {
    @Option(
        name: [.customShort("X"), .customLong("request")],
        help: ArgumentHelp("The request method.", valueName: "method"))
    var method: String?

    @Option(
        name: [.customShort("H"), .customLong("header")],
        help: ArgumentHelp("A request header, 'Name: value'. Repeatable.", valueName: "header"))
    var headers: [String] = []

    @Option(
        name: [.customShort("d"), .customLong("data")],
        help: ArgumentHelp("A request body ('@file' reads a file); the method becomes POST.", valueName: "data"))
    var data: String?

    @Flag(
        name: [.customShort("G"), .customLong("get")],
        help: "Send the -d data in the URL's query, with GET, instead of as a POST body (as curl's -G).")
    var dataInQuery = false

    @Option(
        name: [.customShort("A"), .customLong("user-agent")], help: ArgumentHelp("The User-Agent.", valueName: "name"))
    var userAgent: String?

    @Option(name: [.customShort("e"), .customLong("referer")], help: ArgumentHelp("The Referer.", valueName: "url"))
    var referer: String?

    @Option(
        name: [.customShort("u"), .customLong("user")],
        help: ArgumentHelp(
            "Credentials for the server's Basic or Digest challenge.",
            discussion: """
                Given only to the host of the URL, and only when it asks (401), through URLSession's authentication \
                challenge; a second challenge means the credentials were refused and the 401 is the answer.
                """, valueName: "user:password"))
    var user: String?

    @Option(
        name: [.customShort("b"), .customLong("cookie")],
        help: ArgumentHelp(
            "Cookies to send: a Netscape-format cookie file, or 'name=value; name2=value2'.", valueName: "file|data"))
    var cookie: String?

    @Option(
        name: [.customShort("c"), .customLong("cookie-jar")],
        help: ArgumentHelp(
            "Write every cookie of the run to this file (Netscape format) at the end.", valueName: "file"))
    var cookieJar: String?

    @Flag(
        name: [.customShort("L"), .customLong("location")], help: "Follow redirects (always on, as URLSession does).")
    var location = false

    @Option(
        name: .customLong("max-redirs"),
        help: ArgumentHelp(
            "At most this many redirects (default \(RedirectPolicy.maximumRedirects), the most URLSession follows, as "
                + "on Darwin; a larger value stops there too).", valueName: "n"))
    var maxRedirects: Int = RedirectPolicy.maximumRedirects

    @Flag(
        name: .customLong("compressed"),
        help: "Ask for a compressed body and decode it (always on, as URLSession does: gzip, deflate, br).")
    var compressed = false

    @Option(
        name: [.customShort("m"), .customLong("max-time")],
        help: ArgumentHelp("Give up a transfer after this many seconds.", valueName: "seconds"))
    var maxTime: Double?

    @Option(
        name: .customLong("connect-timeout"),
        help: ArgumentHelp(
            "Give up when the server sends nothing for this many seconds (URLSession's request timeout; default 60).",
            valueName: "seconds"))
    var connectTimeout: Double?
}

/// How the connection is made: TLS trust, proxies, HTTP versions, the rate.
struct ConnectionOptions: ParsableArguments {
    @Option(
        name: .customLong("cacert"),
        help: ArgumentHelp(
            "Trust only the certificate authorities in this file (PEM or DER) for the server's certificate.",
            valueName: "file"))
    var caCertificates: String?

    @Option(
        name: [.customLong("pin"), .customLong("pinnedpubkey")],
        help: ArgumentHelp(
            "Require the server's public key to have this SHA-256 digest ('sha256//BASE64', several joined by ';').",
            discussion: """
                The digest is of the DER SubjectPublicKeyInfo, as curl's --pinnedpubkey: openssl x509 -in cert.pem \
                -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64. The \
                certificate must still be trusted (or -k given). A mismatch exits with status 90.
                """, valueName: "sha256//base64"))
    var pin: String?

    @Flag(
        name: [.customShort("k"), .customLong("insecure")],
        help: ArgumentHelp(
            "DANGEROUS: accept any server certificate (expired, self-signed, another host's).",
            discussion: """
                Anyone on the network path can then read and change the transfer. Use --cacert or --pin for a \
                private server instead.
                """))
    var insecure = false

    @Option(
        name: [.customShort("x"), .customLong("proxy")],
        help: ArgumentHelp(
            "Send through this proxy: http://host:port (CONNECT for https URLs) or socks5://host:port; "
                + "'user:password@' in it answers the proxy's 407.", valueName: "url"))
    var proxy: String?

    @Option(
        name: .customLong("noproxy"),
        help: ArgumentHelp("Hosts that go direct, comma-separated ('*' for all).", valueName: "hosts"))
    var noProxy: String?

    @Flag(name: .customLong("http1.1"), help: "Speak HTTP/1.1 only (offer no h2 in TLS).")
    var http11 = false

    @Flag(
        name: .customLong("http2"),
        help: "Offer HTTP/2 to https servers (the default; plain http stays HTTP/1.1: no h2c upgrade).")
    var http2 = false

    @Option(
        name: .customLong("limit-rate"),
        help: ArgumentHelp(
            "At most this many bytes per second per transfer (100K, 1.5M, 2G; 0: no limit, as in curl).",
            discussion: """
                The transfer is paused (URLSessionTask.suspend, which stops reading from the socket) whenever it gets \
                ahead: the server slows down through TCP, nothing is dropped.
                """, valueName: "rate"))
    var limitRate: String?
}

/// Retrying and running several transfers.
struct RetryOptions: ParsableArguments {
    @Option(
        name: .customLong("retry"),
        help: ArgumentHelp(
            "Retry a transient failure up to this many times, resuming a download where it stopped.",
            discussion: """
                Transient: a timeout, a dropped connection, and the answers 408, 429, 500, 502, 503 and 504 (their \
                Retry-After is honoured). Waits 1 s, then twice as long each time (at most 10 min), unless \
                --retry-delay is given (0: this backoff). A refused connection counts only with \
                --retry-connrefused. Bytes already written to standard output or a pipe are never retried.
                """, valueName: "n"))
    var retry: Int = 0

    @Option(
        name: .customLong("retry-delay"), help: ArgumentHelp("Wait this long between retries.", valueName: "seconds"))
    var retryDelay: Double?

    @Option(
        name: .customLong("retry-max-time"),
        help: ArgumentHelp(
            "Start no retry after this many seconds since the first attempt (0: no limit).", valueName: "seconds"))
    var retryMaxTime: Double?

    @Flag(name: .customLong("retry-connrefused"), help: "Count a refused connection as transient too.")
    var retryConnectionRefused = false

    @Flag(name: [.customShort("Z"), .customLong("parallel")], help: "Run the transfers at the same time.")
    var parallel = false

    @Option(
        name: .customLong("parallel-max"),
        help: ArgumentHelp("With -Z, at most this many at once (default 50).", valueName: "n"))
    var parallelMax: Int = 50
}
