import Courier
import Foundation
import Testing

@testable import courier

/// The `courier` tool's pure parts: the progress line, the rate limiter, `-w`, cookie files, sizes, names and the
/// exit-status table.
@Suite("courier: formatting and rules")
struct CLIFormattingTests {
    @Test(arguments: [20, 40, 60, 80, 200])
    func aProgressLineNeverReachesTheLastColumn(width: Int) {
        let lines = [
            ProgressLine(
                name: "ubuntu-24.04-desktop-amd64.iso", received: 1_234_567_890, total: 5_900_000_000, rate: 12_345_678),
            ProgressLine(name: "a", received: 0, total: 10, rate: 0),
            ProgressLine(name: "stream", received: 98_765, total: nil, rate: 1000),
            ProgressLine(name: String(repeating: "x", count: 300), received: 5, total: 10, rate: 1, phase: .finished),
        ]
        for line in lines {
            let text = line.render(width: width)
            #expect(text.count <= width - 1, "\(text)")
            #expect(!text.isEmpty)
        }
    }

    @Test func aWideLineHasPercentBarSizesRateAndETA() {
        let line = ProgressLine(
            name: "big.iso", received: 512 * 1024 * 1024, total: 1024 * 1024 * 1024, rate: 64 * 1024 * 1024)
        let text = line.render(width: 100)
        #expect(text.hasPrefix("big.iso  50% ["))
        #expect(text.contains("512.0 MiB/1.0 GiB"))
        #expect(text.contains("64.0 MiB/s"))
        #expect(text.contains("ETA 0:08"))
        // 40 columns: the bar goes, the name and the percent stay.
        let narrow = line.render(width: 40)
        #expect(narrow.hasPrefix("big.iso  50%"))
        #expect(!narrow.contains("["))
    }

    @Test func anUnknownLengthShowsASpinnerBytesAndRate() {
        var line = ProgressLine(name: "feed", received: 2048, total: nil, rate: 1024)
        let first = line.render(width: 80)
        line.tick += 1
        let second = line.render(width: 80)
        #expect(first != second)
        #expect(first.contains("2.0 KiB") && first.contains("1.0 KiB/s"))
        #expect(!first.contains("%"))
    }

    @Test func theRateLimiterPausesOnlyWhenAhead() {
        var limiter = RateLimiter(bytesPerSecond: 100 * 1024)
        #expect(limiter.record(1024, at: 10) == nil)
        // 100 KiB more at once: about a second ahead (less the burst allowance of 10 KiB).
        let pause = limiter.record(100 * 1024, at: 10)
        #expect(pause.map { $0 > 0.8 && $0 < 1.0 } == true)
        // After that second the transfer is within its rate again.
        #expect(limiter.record(1, at: 11) == nil)
    }

    @Test func writeOutExpandsVariablesAndEscapes() {
        var report = TransferReport()
        report.httpCode = 206
        report.sizeDownload = 1234
        report.timeTotal = 2
        report.httpVersion = "2"
        report.numRedirects = 3
        let (text, unknown) = WriteOut.expand(
            "%{http_code} %{size_download} %{speed_download} %{http_version} %{num_redirects} %{nope} 100%%\\n\\t",
            report: report)
        #expect(text == "206 1234 617 2 3  100%\n\t")
        #expect(unknown == ["nope"])
        #expect(WriteOut.expand("%{time_total}", report: report).text == "2.000000")
    }

    @Test func netscapeCookieFilesRoundTrip() throws {
        let text = """
            # Netscape HTTP Cookie File
            .example.com\tTRUE\t/\tTRUE\t4102444800\tsession\tabc
            #HttpOnly_host.example\tFALSE\t/app\tFALSE\t0\tid\t42
            expired.example\tFALSE\t/\tFALSE\t1000\told\tgone
            not a cookie line
            """
        let (cookies, skipped) = NetscapeCookieFile.parse(text)
        #expect(skipped == 1)
        #expect(cookies.map(\.name) == ["session", "id"])
        #expect(cookies[0].domain == ".example.com" && cookies[0].isSecure)
        #expect(cookies[0].expiresDate == Date(timeIntervalSince1970: 4_102_444_800))
        #expect(cookies[1].isHTTPOnly && cookies[1].isSessionOnly && cookies[1].path == "/app")
        let again = NetscapeCookieFile.parse(NetscapeCookieFile.format(cookies)).cookies
        #expect(again.map(\.name) == ["session", "id"])
        #expect(again.map(\.domain) == [".example.com", "host.example"])
        #expect(again[1].isHTTPOnly)
    }

    /// A tab in a cookie's `Path` (which a `Set-Cookie` field may carry) would shift the fields of its jar line: the
    /// cookie is left out of the file, as curl leaves it out, and the others are written.
    @Test(arguments: ["/a\tb", "/a\nb", "/a\rb", "/a\r\nb"])
    func aCookieWithATabOrALineBreakInAFieldIsLeftOutOfTheJar(path: String) throws {
        let broken = try #require(
            HTTPCookie(properties: [.domain: "example.com", .path: path, .name: "broken", .value: "v"]))
        let plain = try #require(
            HTTPCookie(properties: [.domain: "example.com", .path: "/", .name: "plain", .value: "v"]))
        let text = NetscapeCookieFile.format([broken, plain])
        #expect(!text.contains("broken"))
        #expect(NetscapeCookieFile.parse(text).cookies.map(\.name) == ["plain"])
        #expect(NetscapeCookieFile.parse(text).skipped == 0)
    }

    /// A cookie a server made to expire beyond what the file format holds is written clamped, not a crash.
    @Test func farFutureCookiesAreClamped() throws {
        let cookie = try #require(
            HTTPCookie(properties: [
                .domain: "example.com", .path: "/", .name: "n", .value: "v",
                .expires: Date(timeIntervalSince1970: 1e30),
            ]))
        #expect(NetscapeCookieFile.format([cookie]).contains("\t253402300799\tn\tv"))
    }

    /// `-u` goes only to the scheme, host and port of the URL on the command line.
    @Test func credentialsAreForTheOriginOnly() throws {
        let url = try #require(URL(string: "https://files.example:8443/a"))
        func space(_ host: String, _ port: Int, _ scheme: String) -> URLProtectionSpace {
            URLProtectionSpace(
                host: host, port: port, protocol: scheme, realm: "r",
                authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
        }
        #expect(TaskHandler.isOrigin(space("files.example", 8443, "https"), of: url))
        #expect(!TaskHandler.isOrigin(space("files.example", 8443, "http"), of: url))
        #expect(!TaskHandler.isOrigin(space("files.example", 443, "https"), of: url))
        #expect(!TaskHandler.isOrigin(space("other.example", 8443, "https"), of: url))
        #expect(
            TaskHandler.isOrigin(
                space("files.example", 80, "http"), of: try #require(URL(string: "http://files.example/"))))
    }

    /// `-v` masks credentials: an `Authorization` keeps its scheme only when a credential follows it (a bare API key
    /// is all secret), and cookies keep their names only (a nameless cookie is all value).
    @Test func verboseHeadersShowNoSecret() {
        #expect(VerboseLog.mask(name: "Authorization", value: "Bearer TOKENSECRET") == "Bearer [masked]")
        #expect(VerboseLog.mask(name: "Authorization", value: "KEYSECRET") == "[masked]")
        #expect(VerboseLog.mask(name: "proxy-authorization", value: "Basic QUJD") == "Basic [masked]")
        #expect(VerboseLog.mask(name: "Cookie", value: "id=ONE; theme=dark") == "id=[masked]; theme=[masked]")
        #expect(VerboseLog.mask(name: "Cookie", value: "NAMELESSSECRET; =EMPTYNAMESECRET") == "[masked]; =[masked]")
        #expect(VerboseLog.mask(name: "Set-Cookie", value: "SETSECRET; Path=/") == "[masked]")
        #expect(VerboseLog.mask(name: "Set-Cookie", value: "sid=SECRET; Path=/; HttpOnly") == "sid=[masked]")
        #expect(VerboseLog.mask(name: "Accept", value: "*/*") == "*/*")
    }

    /// `courier queue list` shows an app's task by its URL, without the `user:password@` it may carry.
    @Test func queueListingsShowNoURLPassword() throws {
        let url = try #require(URL(string: "https://ada:URLSECRET@example.com/file.iso"))
        let task = BackgroundTaskSnapshot(
            identifier: "app.one", task: 3, kind: .download, originalRequest: CodableRequest(URLRequest(url: url)),
            state: .running, bytesReceived: 10, bytesExpectedToReceive: 100, response: nil, taskDescription: nil)
        #expect(QueueCommand.List.line(for: task) == "app.one\t3\trunning\t10/100\thttps://example.com/file.iso")
    }

    /// A task's description and its session's identifier are an app's text (a title a server sent): an escape
    /// sequence in them reached the terminal raw.
    @Test func queueListingsEscapeControlCharacters() throws {
        let url = try #require(URL(string: "https://example.com/file.iso"))
        let task = BackgroundTaskSnapshot(
            identifier: "app\u{1B}[2J", task: 3, kind: .download, originalRequest: CodableRequest(URLRequest(url: url)),
            state: .running, bytesReceived: 10, bytesExpectedToReceive: 0, response: nil,
            taskDescription: "title\u{1B}]0;owned\u{07}\u{9B}")
        let line = QueueCommand.List.line(for: task)
        #expect(!line.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 || $0.value == 0x9B })
        #expect(line.hasPrefix("app") && line.contains("title"))
    }

    @Test func sizesAndRatesParseAndFormat() {
        #expect(ByteCount.parse("100K") == 102_400)
        #expect(ByteCount.parse("1.5M") == 1_572_864)
        #expect(ByteCount.parse("2g") == Int64(2) << 30)
        #expect(ByteCount.parse("500") == 500)
        #expect(ByteCount.parse("100KB/s") == 102_400)
        for bad in ["", "0", "-5", "fast", "1e9", "K"] { #expect(ByteCount.parse(bad) == nil, "\(bad)") }
        // `--limit-rate 0` is no limit (as in curl): zero is read, never a negative number.
        for zero in ["0", "0K", "0.0M/s"] { #expect(ByteCount.parseAllowingZero(zero) == 0, "\(zero)") }
        #expect(ByteCount.parseAllowingZero("100K") == 102_400)
        for bad in ["", "-5", "-0.5", "K"] { #expect(ByteCount.parseAllowingZero(bad) == nil, "\(bad)") }
        #expect(ByteCount.format(512) == "512 B")
        #expect(ByteCount.format(1536) == "1.5 KiB")
        #expect(ByteCount.formatDuration(3725) == "1:02:05")
    }

    @Test func remoteNamesStayPlainFilesInTheFolder() {
        #expect(DownloadPlacement.safeFileName("../../etc/passwd") == "passwd")
        #expect(DownloadPlacement.safeFileName("..\\..\\boot.ini") == "boot.ini")
        #expect(DownloadPlacement.safeFileName(".bashrc") == "_bashrc")
        #expect(DownloadPlacement.safeFileName("..") == "index.html")
        #expect(DownloadPlacement.safeFileName(nil) == "index.html")
        #expect(DownloadPlacement.safeFileName("a\u{1B}[2Jb.txt") == "a[2Jb.txt")
        #expect(DownloadPlacement.safeFileName("report.pdf") == "report.pdf")
        // A record's name stays out of reach however long the name: shortening must not bring the suffix back.
        let long = String(repeating: "a", count: 184) + PartialRecord.suffix
        #expect(long.count == 200)
        for name in [long, "x" + long, "x.iso" + PartialRecord.suffix] {
            let safe = DownloadPlacement.safeFileName(name)
            #expect(!safe.hasSuffix(PartialRecord.suffix), "\(name) became \(safe)")
            #expect(safe.count <= 200)
        }
    }

    /// File systems count a name's bytes (255 at most), not its characters: a name in another script, or one
    /// character with hundreds of combining marks, is cut to 200 bytes at a character's edge.
    @Test func remoteNamesFitInAFileNameWhateverTheirScript() {
        let japanese = DownloadPlacement.safeFileName(String(repeating: "日", count: 150) + ".pdf")
        #expect(japanese.utf8.count <= 200)
        #expect(japanese == String(repeating: "日", count: 66))
        let emoji = DownloadPlacement.safeFileName(String(repeating: "👩‍👩‍👧", count: 30))
        #expect(emoji.utf8.count <= 200)
        #expect(emoji == String(repeating: "👩‍👩‍👧", count: 11))
        let marks = DownloadPlacement.safeFileName("a" + String(repeating: "\u{301}", count: 300))
        #expect(!marks.isEmpty)
        #expect(marks.utf8.count <= 200)
        let record = DownloadPlacement.safeFileName(String(repeating: "é", count: 92) + PartialRecord.suffix)
        #expect(record.utf8.count <= 200)
        #expect(!record.hasSuffix(PartialRecord.suffix))
    }

    /// C1 controls (U+009B is a terminal's `ESC [`) and bidirectional overrides never reach a name.
    @Test func remoteNamesHaveNoC1ControlOrBidiOverride() {
        #expect(DownloadPlacement.safeFileName("a\u{9B}2Jb.txt") == "a2Jb.txt")
        #expect(DownloadPlacement.safeFileName("a\u{85}\u{9D}0;t\u{9C}.txt") == "a0;t.txt")
        #expect(DownloadPlacement.safeFileName("invoice\u{202E}fdp.exe") == "invoicefdp.exe")
        #expect(DownloadPlacement.safeFileName("\u{2066}x\u{2069}\u{200F}.bin") == "x.bin")
        #expect(DownloadPlacement.safeFileName("café-日本.pdf") == "café-日本.pdf")
    }

    @Test func exitStatusesAreCurls() {
        #expect(ExitStatus.forError(URLError(.cannotFindHost)) == 6)
        #expect(ExitStatus.forError(URLError(.cannotConnectToHost)) == 7)
        #expect(ExitStatus.forError(URLError(.timedOut)) == 28)
        #expect(ExitStatus.forError(URLError(.secureConnectionFailed)) == 35)
        #expect(ExitStatus.forError(URLError(.networkConnectionLost)) == 56)
        #expect(ExitStatus.forError(URLError(.serverCertificateUntrusted)) == 60)
        #expect(ExitStatus.forError(URLError(.serverCertificateHasBadDate)) == 60)
        #expect(ExitStatus.forError(URLError(.httpTooManyRedirects)) == 47)
        #expect(ExitStatus.forError(URLError(.cannotWriteToFile)) == 23)
    }

    @Test func proxyOptionsBecomeAProxyDictionary() throws {
        let http = try #require(
            try TransferSettings.proxyDictionary(proxy: "http://u:p@127.0.0.1:3128", noProxy: "a.test, b.test"))
        #expect(http["HTTPProxy"] == "127.0.0.1" && http["HTTPPort"] == "3128" && http["HTTPSEnable"] == "1")
        #expect(http["ExceptionsList"] == "a.test,b.test")
        #expect(TransferSettings.proxyCredentials(in: "http://u:p@127.0.0.1:3128")! == ("u", "p"))
        // Decoded once, as curl decodes them.
        #expect(TransferSettings.proxyCredentials(in: "http://u%2541:p%25@127.0.0.1:3128")! == ("u%41", "p%"))
        let socksUser = try #require(
            try TransferSettings.proxyDictionary(proxy: "socks5://a%2541:c%2541@127.0.0.1:1080", noProxy: nil))
        #expect(socksUser["SOCKSUser"] == "a%41" && socksUser["SOCKSPassword"] == "c%41")
        let socks = try #require(try TransferSettings.proxyDictionary(proxy: "socks5://127.0.0.1:1080", noProxy: nil))
        #expect(socks["SOCKSProxy"] == "127.0.0.1" && socks["HTTPProxy"] == nil)
        #expect(try TransferSettings.proxyDictionary(proxy: "http://127.0.0.1:1", noProxy: "*") == [:])
        #expect(throws: CLIError.self) { try TransferSettings.proxyDictionary(proxy: "ftp://x:1", noProxy: nil) }
    }

    /// A `--proxy` that cannot be used is named in the error without its user info: the text as typed may hold a
    /// real password next to the typo that made it unusable (here a missing host). Before the fix the message quoted
    /// it whole, password included.
    @Test(arguments: [
        ("http://user:s3cret@:3128", "http://:3128"), ("user:s3cret@:3128", ":3128"),
        ("socks5://user:s3cret@", "socks5://"),
    ])
    func aProxyThatCannotBeUsedIsNamedWithoutItsPassword(proxy: String, named: String) {
        do {
            _ = try TransferSettings.proxyDictionary(proxy: proxy, noProxy: nil)
            Issue.record("\(proxy) was accepted")
        } catch let error as CLIError {
            #expect(!error.description.contains("s3cret"))
            #expect(!error.description.contains("user"))
            #expect(error.description.hasSuffix("not \(named)"))
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    /// The user info goes from text that is not a URL too: up to the last `@`, after a real scheme's `://` only.
    @Test func proxyTextLosesItsUserInfoWhateverItsShape() {
        #expect(TransferSettings.proxyTextWithoutCredentials("http://u:s3cret@pro xy:3128") == "http://pro xy:3128")
        #expect(TransferSettings.proxyTextWithoutCredentials("socks5://u:s3c@ret@h:1080") == "socks5://h:1080")
        #expect(TransferSettings.proxyTextWithoutCredentials("u:s3cret@proxy") == "proxy")
        // A `://` inside the password is not a scheme's: nothing before the `@` is kept.
        #expect(TransferSettings.proxyTextWithoutCredentials("u:a://s3cret@proxy") == "proxy")
        #expect(TransferSettings.proxyTextWithoutCredentials("http:/u:s3cret@proxy") == "proxy")
        #expect(TransferSettings.proxyTextWithoutCredentials("http://proxy:3128") == "http://proxy:3128")
    }

    @Test func pinsParseAndBadPinsAreRefused() throws {
        let digest = Data(repeating: 7, count: 32)
        #expect(try TrustPolicy.parsePins("sha256//\(digest.base64EncodedString())") == [digest])
        #expect(
            try TrustPolicy.parsePins("sha256//\(digest.base64EncodedString());sha256//\(digest.base64EncodedString())")
                .count == 2)
        #expect(throws: CLIError.self) { try TrustPolicy.parsePins("md5//abc") }
        #expect(throws: CLIError.self) { try TrustPolicy.parsePins("sha256//AAAA") }
    }
}
