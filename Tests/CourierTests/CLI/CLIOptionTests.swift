import CourierMockServer
import CourierTestSupport
import Crypto
import Foundation
import NIOConcurrencyHelpers
import SwiftASN1
import Testing
import X509

#if canImport(Glibc)
    import Glibc
#endif

/// Writes the shared test CA's certificate as PEM into `directory`.
private func writeAuthorityPEM(in directory: URL) throws -> URL {
    let url = directory.appendingPathComponent("ca.pem")
    let base64 = SharedTestTLS.authorityDER.base64EncodedString(options: [.lineLength64Characters])
    try Data("-----BEGIN CERTIFICATE-----\n\(base64)\n-----END CERTIFICATE-----\n".utf8).write(to: url)
    return url
}

/// `sha256//…` of the SubjectPublicKeyInfo of a DER certificate, computed here independently of the tool.
private func pin(ofCertificate der: Data) throws -> String {
    let certificate = try Certificate(derEncoded: Array(der))
    var serializer = DER.Serializer()
    try serializer.serialize(certificate.publicKey)
    return "sha256//" + Data(SHA256.hash(data: serializer.serializedBytes)).base64EncodedString()
}

extension CLISuites {
    @Suite("courier get: options")
    struct CLIOptionTests {
        @Test func headSendsHEADAndWritesTheHead() async throws {
            try await withServer { server in
                server.route(
                    "/doc", response: MockResponse(headers: [("X-Kind", "doc")], body: .data(Data("body".utf8))))
                let result = try await runCourier(["get", "-I", server.url("/doc").absoluteString])
                #expect(result.status == 0)
                let text = String(decoding: result.stdout, as: UTF8.self)
                #expect(text.hasPrefix("HTTP/1.1 200\r\n"))
                #expect(text.contains("X-Kind: doc\r\n"))
                #expect(!text.contains("body"))
                #expect(server.requests(path: "/doc").first?.method == "HEAD")
            }
        }

        /// URLSession makes a 303's request a `GET`, `HEAD` included (Darwin's rule); `-I` keeps asking with `HEAD`,
        /// as curl's `-I -L`, and writes no body.
        @Test func headStaysHeadThroughASeeOther() async throws {
            try await withServer { server in
                server.route("/from", response: MockResponse(status: 303, headers: [("Location", "/doc")]))
                server.route(
                    "/doc", response: MockResponse(headers: [("X-Kind", "doc")], body: .data(Data("body".utf8))))
                let result = try await runCourier(["get", "-I", server.url("/from").absoluteString])
                #expect(result.status == 0, "\(result.stderr)")
                let text = String(decoding: result.stdout, as: UTF8.self)
                #expect(text.contains("X-Kind: doc\r\n"))
                #expect(!text.contains("body"))
                #expect(server.requests(path: "/doc").first?.method == "HEAD")
            }
        }

        @Test func userAgentRefererAndHeadersAreSent() async throws {
            try await withServer { server in
                server.route("/h", response: .ok("ok"))
                let result = try await runCourier([
                    "get", server.url("/h").absoluteString, "-A", "courier-test/1", "-e", "http://from.example/",
                    "-H", "X-One: 1",
                ])
                #expect(result.status == 0)
                let request = try #require(server.requests(path: "/h").first)
                #expect(request.header("User-Agent") == "courier-test/1")
                #expect(request.header("Referer") == "http://from.example/")
                #expect(request.header("X-One") == "1")
            }
        }

        /// `-u` answers the 401 challenge; wrong credentials leave the 401 as the answer (22 with `-f`); `-v` masks
        /// the credentials it shows.
        @Test func userAnswersTheChallengeAndVerboseMasksIt() async throws {
            try await withServer { server in
                server.protect("/secret", user: "ann", password: "s3cret", response: .ok("the secret"))
                let good = try await runCourier(["get", server.url("/secret").absoluteString, "-u", "ann:s3cret", "-v"])
                #expect(good.status == 0, "\(good.stderr)")
                #expect(good.stdout == Data("the secret".utf8))
                #expect(good.stderr.contains("> GET /secret HTTP/1.1"))
                #expect(good.stderr.contains("< HTTP/1.1 401"))
                #expect(good.stderr.contains("< HTTP/1.1 200"))
                #expect(good.stderr.contains("Authorization: Basic [masked]"))
                #expect(!good.stderr.contains(Data("ann:s3cret".utf8).base64EncodedString()))
                let bad = try await runCourier(["get", server.url("/secret").absoluteString, "-u", "ann:wrong", "-f"])
                #expect(bad.status == 22)
                // Credentials in the URL answer the challenge too, and `%{url_effective}` shows the URL without them.
                var inURL = try #require(URLComponents(url: server.url("/secret"), resolvingAgainstBaseURL: false))
                inURL.user = "ann"
                inURL.password = "s3cret"
                let embedded = try await runCourier([
                    "get", try #require(inURL.string), "-o", "/dev/null", "-w", "%{http_code} %{url_effective}",
                ])
                let written = String(decoding: embedded.stdout, as: UTF8.self)
                #expect(written == "200 \(server.url("/secret").absoluteString)", "\(embedded.stderr)")
                #expect(!written.contains("s3cret"))
            }
        }

        /// `-b FILE` sends the file's cookies; `-c FILE` writes every cookie of the run, 0600, in Netscape format.
        @Test func cookieFilesAreReadAndWritten() async throws {
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try await withServer { server in
                server.route(
                    "/login", response: MockResponse(headers: [("Set-Cookie", "session=abc123; Path=/; HttpOnly")]))
                server.route("/page", response: .ok("page"))
                let input = directory.appendingPathComponent("in.txt")
                try Data("127.0.0.1\tFALSE\t/\tFALSE\t0\ttheme\tdark\n".utf8).write(to: input)
                let jar = directory.appendingPathComponent("jar.txt")
                let result = try await runCourier([
                    "get", server.url("/login").absoluteString, server.url("/page").absoluteString, "-b", input.path,
                    "-c", jar.path,
                ])
                #expect(result.status == 0, "\(result.stderr)")
                #expect(server.requests(path: "/login").first?.header("Cookie") == "theme=dark")
                let cookie = try #require(server.requests(path: "/page").first?.header("Cookie"))
                #expect(cookie.contains("theme=dark") && cookie.contains("session=abc123"))
                let written = try String(contentsOf: jar, encoding: .utf8)
                #expect(written.hasPrefix("# Netscape HTTP Cookie File"))
                #expect(written.contains("#HttpOnly_127.0.0.1\tFALSE\t/\tFALSE\t0\tsession\tabc123"))
                #expect(written.contains("\ttheme\tdark"))
                var info = stat()
                #expect(stat(jar.path, &info) == 0 && info.st_mode & 0o777 == 0o600)
                // A literal cookie string is sent as it is.
                let literal = try await runCourier(["get", server.url("/page").absoluteString, "-b", "a=1; b=2"])
                #expect(literal.status == 0)
                #expect(server.requests(path: "/page").last?.header("Cookie") == "a=1; b=2")
            }
        }

        /// `--compressed` (and no option: URLSession always asks) decodes a gzip body; `%{size_download}` counts
        /// the decoded bytes.
        @Test(arguments: [true, false])
        func compressedBodiesAreDecoded(withOption: Bool) async throws {
            try await withServer { server in
                let text = String(repeating: "courier compresses well. ", count: 400)
                let gzipped = Deflater.compress(Array(text.utf8), as: .gzip)
                server.route(
                    "/z",
                    response: MockResponse(headers: [("Content-Encoding", "gzip")], body: .data(Data(gzipped))))
                let result = try await runCourier(
                    ["get", server.url("/z").absoluteString, "-w", "|%{size_download}"]
                        + (withOption ? ["--compressed"] : []))
                #expect(result.status == 0)
                #expect(String(decoding: result.stdout, as: UTF8.self) == text + "|\(text.utf8.count)")
                #expect(server.requests(path: "/z").first?.header("Accept-Encoding")?.contains("gzip") == true)
            }
        }

        @Test func redirectsAreFollowedUpToMaxRedirs() async throws {
            try await withServer { server in
                server.route("/r1", response: MockResponse(status: 302, headers: [("Location", "/r2")]))
                server.route("/r2", response: MockResponse(status: 302, headers: [("Location", "/end")]))
                server.route("/end", response: .ok("end"))
                let followed = try await runCourier([
                    "get", server.url("/r1").absoluteString, "-w", "\\n%{http_code} %{num_redirects} %{url_effective}",
                ])
                #expect(followed.status == 0)
                #expect(
                    String(decoding: followed.stdout, as: UTF8.self)
                        == "end\n200 2 \(server.url("/end").absoluteString)")
                let capped = try await runCourier(["get", server.url("/r1").absoluteString, "--max-redirs", "1"])
                #expect(capped.status == 47)
                #expect(capped.stderr.contains("--max-redirs"))
                #expect(capped.stdout.isEmpty)
                // The refused redirect's page never replaces the output file.
                let directory = try makeTemporaryDirectory()
                defer { try? FileManager.default.removeItem(at: directory) }
                let out = directory.appendingPathComponent("keep.txt")
                try Data("keep".utf8).write(to: out)
                let kept = try await runCourier([
                    "get", server.url("/r1").absoluteString, "--max-redirs", "0", "-o", out.path,
                ])
                #expect(kept.status == 47)
                #expect(try Data(contentsOf: out) == Data("keep".utf8))
                #expect(filesIn(directory) == ["keep.txt"])
            }
        }

        /// URLSession follows at most 20 redirects (Darwin's limit) and fails the 21st itself, before the tool is
        /// asked: the default --max-redirs is that limit, and a longer chain fails with 47 and a message naming the
        /// limit, with a larger --max-redirs too (the engine's "too many HTTP redirects" said nothing of it).
        @Test func redirectsStopAtURLSessionsLimit() async throws {
            try await withServer { server in
                for hop in 0..<21 {
                    server.route(
                        "/hop\(hop)", response: MockResponse(status: 302, headers: [("Location", "/hop\(hop + 1)")]))
                }
                server.route("/hop21", response: .ok("end"))
                let twenty = try await runCourier([
                    "get", server.url("/hop1").absoluteString, "-w", "\\n%{num_redirects}",
                ])
                #expect(twenty.status == 0, "\(twenty.stderr)")
                #expect(String(decoding: twenty.stdout, as: UTF8.self) == "end\n20")
                for extra: [String] in [[], ["--max-redirs", "30"]] {
                    let capped = try await runCourier(["get", server.url("/hop0").absoluteString] + extra)
                    #expect(capped.status == 47)
                    #expect(capped.stderr.contains("more than 20 redirects"), "\(capped.stderr)")
                    #expect(capped.stdout.isEmpty)
                }
            }
        }

        @Test func writeOutReportsTheTransfer() async throws {
            try await withServer { server in
                server.route(
                    "/w",
                    response: MockResponse(headers: [("Content-Type", "text/x-test")], body: .pattern(length: 4321)))
                let result = try await runCourier([
                    "get", server.url("/w").absoluteString, "-o", "/dev/null", "-w",
                    "%{http_code}|%{size_download}|%{http_version}|%{content_type}|%{time_total}|%{time_connect}|%{time_starttransfer}|%{speed_download}|%{exitcode}",
                ])
                #expect(result.status == 0, "\(result.stderr)")
                let fields = String(decoding: result.stdout, as: UTF8.self).split(separator: "|").map(String.init)
                try #require(fields.count == 9)
                #expect(Array(fields.prefix(4)) == ["200", "4321", "1.1", "text/x-test"])
                let total = try #require(Double(fields[4]))
                let connect = try #require(Double(fields[5]))
                let firstByte = try #require(Double(fields[6]))
                #expect(total > 0 && connect > 0 && connect <= firstByte && firstByte <= total)
                #expect((Double(fields[7]) ?? 0) > 0)
                #expect(fields[8] == "0")
            }
        }

        /// An untrusted certificate exits 60; `--cacert` trusts its CA; `-k` accepts it; `--pin` checks the key (90 on
        /// a mismatch); `-v` names the TLS version and the certificate.
        @Test func trustOptions() async throws {
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try await withServer(.https, tlsIdentity: SharedTestTLS.serverIdentity) { server in
                server.route("/t", response: .ok("trusted"))
                let url = server.url("/t").absoluteString
                let untrusted = try await runCourier(["get", url])
                #expect(untrusted.status == 60, "\(untrusted.stderr)")
                let ca = try writeAuthorityPEM(in: directory)
                let withCA = try await runCourier(["get", url, "--cacert", ca.path, "-v"])
                #expect(withCA.status == 0, "\(withCA.stderr)")
                #expect(withCA.stdout == Data("trusted".utf8))
                #expect(withCA.stderr.contains("* TLS: TLSv1."))
                #expect(withCA.stderr.contains("* Server certificate:"))
                #expect(try await runCourier(["get", url, "-k"]).status == 0)

                let leaf = try #require(SharedTestTLS.serverIdentity.certificateChainDER.first)
                let rightPin = try pin(ofCertificate: Data(leaf))
                #expect(try await runCourier(["get", url, "--cacert", ca.path, "--pin", rightPin]).status == 0)
                let wrongPin = "sha256//" + Data(repeating: 1, count: 32).base64EncodedString()
                let mismatch = try await runCourier(["get", url, "--cacert", ca.path, "--pin", wrongPin])
                #expect(mismatch.status == 90)
                #expect(mismatch.stderr.contains("--pin"))
                // -k skips the chain but never the pin.
                #expect(try await runCourier(["get", url, "-k", "--pin", wrongPin]).status == 90)
                #expect(try await runCourier(["get", url, "-k", "--pin", rightPin]).status == 0)
                // A pin does not make an untrusted certificate trusted.
                #expect(try await runCourier(["get", url, "--pin", rightPin]).status == 60)
                #expect(try await runCourier(["get", url, "--cacert", "/nonexistent/ca.pem"]).status == 77)
            }
        }

        @Test func httpVersionsFollowTheOptions() async throws {
            let server = MockServer(scheme: .http2, tlsIdentity: SharedTestTLS.serverIdentity)
            try await server.start()
            defer { Task { try? await server.shutdown() } }
            server.route("/v", response: .ok("v"))
            let url = server.url("/v").absoluteString
            let two = try await runCourier(["get", url, "-k", "--http2", "-w", " %{http_version}"])
            #expect(String(decoding: two.stdout, as: UTF8.self) == "v 2", "\(two.stderr)")
            let one = try await runCourier(["get", url, "-k", "--http1.1", "-w", " %{http_version}"])
            #expect(String(decoding: one.stdout, as: UTF8.self) == "v 1.1", "\(one.stderr)")
            #expect(try await runCourier(["get", url, "--http1.1", "--http2"]).status == 2)
        }

        @Test func proxyAndNoProxy() async throws {
            let proxy = MockProxy()
            try await proxy.start()
            do {
                try await withServer { origin in
                    origin.route("/p", response: .ok("origin"))
                    let url = origin.url("/p").absoluteString
                    let proxied = try await runCourier(["get", url, "--proxy", "http://127.0.0.1:\(proxy.port)"])
                    #expect(proxied.status == 0, "\(proxied.stderr)")
                    #expect(proxied.stdout == Data("origin".utf8))
                    #expect(proxy.requests.count == 1)
                    let direct = try await runCourier([
                        "get", url, "--proxy", "http://127.0.0.1:\(proxy.port)", "--noproxy", "127.0.0.1",
                    ])
                    #expect(direct.status == 0)
                    #expect(proxy.requests.count == 1)
                    #expect(origin.requests(path: "/p").count == 2)
                }
                try await proxy.shutdown()
            } catch {
                try? await proxy.shutdown()
                throw error
            }
        }

        /// Without `--proxy`, the proxy comes from the environment, as curl's does: `http_proxy` for http URLs, unless
        /// `no_proxy` names the host. (A session reads only these variables, when it is created.)
        @Test func theEnvironmentsProxyVariablesAreHonoured() async throws {
            let proxy = MockProxy()
            try await proxy.start()
            do {
                try await withServer { origin in
                    origin.route("/e", response: .ok("origin"))
                    let url = origin.url("/e").absoluteString
                    var environment = ProcessInfo.processInfo.environment
                    for name in ["no_proxy", "NO_PROXY", "all_proxy", "ALL_PROXY"] { environment[name] = nil }
                    environment["http_proxy"] = "http://127.0.0.1:\(proxy.port)"
                    let proxied = try await runCourier(["get", url], environment: environment)
                    #expect(proxied.status == 0, "\(proxied.stderr)")
                    #expect(proxied.stdout == Data("origin".utf8))
                    #expect(proxy.requests.count == 1)
                    environment["no_proxy"] = "127.0.0.1"
                    let direct = try await runCourier(["get", url], environment: environment)
                    #expect(direct.status == 0)
                    #expect(proxy.requests.count == 1)
                    #expect(origin.requests(path: "/e").count == 2)
                }
                try await proxy.shutdown()
            } catch {
                try? await proxy.shutdown()
                throw error
            }
        }

        /// `-O` names files after their URLs; `-J` lets the server name them (reduced to a plain name: Courier's
        /// `suggestedFilename` turns the slashes of a hostile name into `_`) and never replaces an existing file.
        @Test func remoteNamesStayInTheOutputFolder() async throws {
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try await withServer { server in
                server.route(
                    "/get",
                    response: MockResponse(
                        headers: [("Content-Disposition", "attachment; filename=\"../../escape.txt\"")],
                        body: .data(Data("named".utf8))))
                server.route("/files/report.csv", response: .ok("a,b"))
                let byURL = try await runCourier([
                    "get", "-O", "--output-dir", directory.path, server.url("/get").absoluteString,
                    server.url("/files/report.csv").absoluteString,
                ])
                #expect(byURL.status == 0, "\(byURL.stderr)")
                #expect(Set(filesIn(directory)) == ["get", "report.csv"])

                let byServer = try await runCourier([
                    "get", "-O", "-J", "--output-dir", directory.path, server.url("/get").absoluteString,
                ])
                #expect(byServer.status == 0, "\(byServer.stderr)")
                #expect(Set(filesIn(directory)) == ["get", "report.csv", "_.._escape.txt"])
                let named = directory.appendingPathComponent("_.._escape.txt")
                #expect(try Data(contentsOf: named) == Data("named".utf8))
                #expect(
                    !FileManager.default.fileExists(
                        atPath: directory.deletingLastPathComponent().appendingPathComponent("escape.txt").path))
                // The server's name never replaces a file that is there.
                try Data("mine".utf8).write(to: named)
                let again = try await runCourier([
                    "get", "-OJ", "--output-dir", directory.path, server.url("/get").absoluteString,
                ])
                #expect(again.status == 23)
                #expect(try Data(contentsOf: named) == Data("mine".utf8))
                #expect(Set(filesIn(directory)) == ["get", "report.csv", "_.._escape.txt"])
            }
        }

        /// A server's long name in another script (`filename*`, 100 characters, 300 bytes of UTF-8) still gives a
        /// file: cut to what a file system takes, not refused by it with "File name too long".
        @Test func aLongServerNameInAnotherScriptIsShortenedToFit() async throws {
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try await withServer { server in
                let encoded = String(repeating: "%E6%97%A5", count: 100) + ".pdf"
                server.route(
                    "/doc",
                    response: MockResponse(
                        headers: [("Content-Disposition", "attachment; filename*=UTF-8''\(encoded)")],
                        body: .data(Data("long".utf8))))
                let result = try await runCourier([
                    "get", "-O", "-J", "--output-dir", directory.path, server.url("/doc").absoluteString,
                ])
                #expect(result.status == 0, "\(result.stderr)")
                let name = String(repeating: "日", count: 66)
                #expect(filesIn(directory) == [name])
                #expect(try Data(contentsOf: directory.appendingPathComponent(name)) == Data("long".utf8))
            }
        }

        /// `filename*` can carry any character: a C1 control (U+009B is a terminal's `ESC [`) or a bidirectional
        /// override (`invoice`, U+202E, `fdp.exe` reads as `invoiceexe.pdf`) reaches neither the file's name nor
        /// `-w`.
        @Test func aServerNameLosesC1ControlsAndBidiOverrides() async throws {
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try await withServer { server in
                let disposition = "attachment; filename*=UTF-8''invoice%C2%9B2J%E2%80%AEfdp.exe"
                server.route(
                    "/doc",
                    response: MockResponse(
                        headers: [("Content-Disposition", disposition)], body: .data(Data("x".utf8))))
                let result = try await runCourier([
                    "get", "-O", "-J", "--output-dir", directory.path, "-w", "%{filename_effective}",
                    server.url("/doc").absoluteString,
                ])
                #expect(result.status == 0, "\(result.stderr)")
                #expect(filesIn(directory) == ["invoice2Jfdp.exe"])
                let written = String(decoding: result.stdout, as: UTF8.self)
                #expect(written.hasSuffix("/invoice2Jfdp.exe"), "\(written)")
            }
        }

        /// A symbolic link that another user planted is not followed: its target stays untouched.
        @Test(.enabled(if: geteuid() == 0, "only root can give a link to another user"))
        func anotherUsersLinkIsNotFollowed() async throws {
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try await withServer { server in
                server.route("/x", response: .ok("payload"))
                let target = directory.appendingPathComponent("precious")
                try Data("precious".utf8).write(to: target)
                let link = directory.appendingPathComponent("out")
                try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)
                #expect(lchown(link.path, 65534, 65534) == 0)
                let result = try await runCourier(["get", server.url("/x").absoluteString, "-o", link.path])
                #expect(result.status == 23, "\(result.stderr)")
                #expect(try Data(contentsOf: target) == Data("precious".utf8))
                #expect(Set(filesIn(directory)) == ["precious", "out"])
            }
        }

        @Test func usageErrorsExitWithTwo() async throws {
            #expect(try await runCourier(["get", "http://127.0.0.1:1/", "-C", "-"]).status == 2)
            #expect(try await runCourier(["get", "http://127.0.0.1:1/", "-C", "100", "-o", "/tmp/x"]).status == 2)
            #expect(try await runCourier(["get", "http://127.0.0.1:1/", "--limit-rate", "fast"]).status == 2)
            #expect(try await runCourier(["get", "http://127.0.0.1:1/", "--pin", "md5//x"]).status == 2)
            #expect(try await runCourier(["get", "http://127.0.0.1:1/", "-o", "a", "-o", "b"]).status == 2)
            #expect(try await runCourier(["get", "ftp://127.0.0.1/"]).status == 1)
            #expect(
                try await runCourier(["get", "-O", "-o", "a", "http://127.0.0.1:1/", "http://127.0.0.1:1/b"]).status
                    == 2)
            #expect(try await runCourier(["get", "-J", "-o", "a", "http://127.0.0.1:1/"]).status == 2)
            let headAndServerName = try await runCourier(["get", "-O", "-J", "-i", "http://127.0.0.1:1/"])
            #expect(headAndServerName.status == 2)
            #expect(headAndServerName.stderr.contains("-J cannot be used with -i or -I"))
            #expect(try await runCourier(["get", "-O", "-J", "-I", "http://127.0.0.1:1/"]).status == 2)
            #expect(
                try await runCourier(["get", "http://127.0.0.1:1/", "--retry", "1", "--retry-delay", "inf"]).status == 2
            )
        }

        /// `courier help` and `--help` describe the options and the exit statuses.
        @Test func helpDescribesOptionsAndExitStatuses() async throws {
            let help = try await runCourier(["help", "get"])
            #expect(help.status == 0)
            let text = String(decoding: help.stdout, as: UTF8.self)
            for needle in [
                "--continue-at", "--retry", "--parallel", "--limit-rate", "--pin", "--insecure", "DANGEROUS",
                "EXIT STATUS", "60", "FILE.courier-partial", "--write-out", "%{time_appconnect}",
            ] {
                #expect(text.contains(needle), "\(needle)")
            }
            #expect(try await runCourier(["--help"]).status == 0)
        }
    }
}
