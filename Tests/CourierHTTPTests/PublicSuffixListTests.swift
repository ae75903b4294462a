import CourierHTTP
import Foundation
import Testing

@Suite("Public suffix list")
struct PublicSuffixListTests {
    /// The list's own test cases (`checkPublicSuffix(domain, registrable)`), against the list in use. Cases with
    /// internationalized names are left out: host names are matched in ASCII, the list's IDN rules are Unicode.
    @Test func theListsOwnTestCasesPass() throws {
        let url = try #require(Bundle.module.url(forResource: "test_psl", withExtension: "txt"))
        let text = try String(contentsOf: url, encoding: .utf8)
        var checked = 0
        for line in text.split(separator: "\n") where line.hasPrefix("checkPublicSuffix(") {
            let arguments = line.dropFirst("checkPublicSuffix(".count).prefix { $0 != ")" }
                .split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard arguments.count == 2, arguments[0] != "null",
                arguments[0].allSatisfy(\.isASCII), !arguments[0].contains("xn--")
            else { continue }
            let domain = String(arguments[0].dropFirst().dropLast())
            let expected = arguments[1] == "null" ? nil : String(arguments[1].dropFirst().dropLast())
            #expect(PublicSuffixList.shared.registrableDomain(of: domain) == expected, "\(domain)")
            checked += 1
        }
        #expect(checked > 50)
    }

    @Test(arguments: [
        ("com", true), ("co.uk", true), ("github.io", true), ("example.com", false), ("www.ck", false),
        ("anything.ck", true), ("unlistedtld", true), ("example.co.uk", false), ("COM", true), ("", false),
        ("a..b", false),
    ])
    func publicSuffixes(domain: String, isPublic: Bool) {
        #expect(PublicSuffixList.shared.isPublicSuffix(domain) == isPublic)
    }

    @Test func theShippedCopyMatchesTheSystemRules() throws {
        let list = PublicSuffixList("// c\ncom\n*.ck\n!www.ck\n\nco.uk extra-words ignored\n")
        #expect(list.isPublicSuffix("com") && list.isPublicSuffix("co.uk") && list.isPublicSuffix("x.ck"))
        #expect(!list.isPublicSuffix("www.ck") && list.registrableDomain(of: "a.www.ck") == "www.ck")
        #expect(list.publicSuffix(of: "a.b.unknown") == "unknown")
    }

    /// RFC 6265bis §5.7: a cookie for a public suffix is refused, unless the host is that suffix itself.
    @Test func cookiesForPublicSuffixesAreRefused() {
        let now = Date()
        #expect(SetCookie.parse("a=b; Domain=co.uk", host: "www.example.co.uk", requestPath: "/", now: now) == nil)
        #expect(SetCookie.parse("a=b; Domain=github.io", host: "me.github.io", requestPath: "/", now: now) == nil)
        #expect(SetCookie.parse("a=b; Domain=.COM", host: "example.com", requestPath: "/", now: now) == nil)
        let own = SetCookie.parse("a=b; Domain=example.co.uk", host: "www.example.co.uk", requestPath: "/", now: now)
        #expect(own?.domain == "example.co.uk" && own?.isHostOnly == false)
        let suffixHost = SetCookie.parse("a=b; Domain=github.io", host: "github.io", requestPath: "/", now: now)
        #expect(suffixHost?.domain == "github.io" && suffixHost?.isHostOnly == true)
    }
}
