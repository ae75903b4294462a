import CourierHTTP
import Foundation
import Testing

@Suite("Public suffix list")
struct PublicSuffixListTests {
    /// The list's own test cases (`checkPublicSuffix(domain, registrable)`), against the list in use, with
    /// internationalized names in Unicode and in their ASCII form (`xn--…`).
    @Test func theListsOwnTestCasesPass() throws {
        let url = try #require(Bundle.module.url(forResource: "test_psl", withExtension: "txt"))
        let text = try String(contentsOf: url, encoding: .utf8)
        var checked = 0
        for line in text.split(separator: "\n") where line.hasPrefix("checkPublicSuffix(") {
            let arguments = line.dropFirst("checkPublicSuffix(".count).prefix { $0 != ")" }
                .split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard arguments.count == 2, arguments[0] != "null" else { continue }
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
        // An internationalized suffix in the ASCII form hosts arrive in (`公司.cn`): it fell back to the `cn` rule,
        // and the cookie went to every company under it.
        #expect(
            SetCookie.parse("s=1; Domain=xn--55qx5d.cn", host: "shop.xn--55qx5d.cn", requestPath: "/", now: now) == nil)
        let idnOwn = SetCookie.parse(
            "s=1; Domain=xn--85x722f.xn--55qx5d.cn", host: "www.xn--85x722f.xn--55qx5d.cn", requestPath: "/", now: now)
        #expect(idnOwn?.domain == "xn--85x722f.xn--55qx5d.cn")
    }

    @Test func internationalizedRulesMatchInBothForms() {
        let list = PublicSuffixList("公司.cn\n*.バス.jp\n!東京.バス.jp\n")
        #expect(list.isPublicSuffix("公司.cn") && list.isPublicSuffix("xn--55qx5d.cn"))
        #expect(list.registrableDomain(of: "www.example.xn--55qx5d.cn") == "example.xn--55qx5d.cn")
        #expect(list.isPublicSuffix("x.xn--zck2b.jp") && list.isPublicSuffix("x.バス.jp"))
        #expect(!list.isPublicSuffix("xn--1lqs71d.xn--zck2b.jp"))
    }
}

/// RFC 3492's encoding, against its own samples and other labels (checked with Python's `punycode` codec).
@Suite("Punycode")
struct PunycodeTests {
    @Test(arguments: [
        ("bücher", "xn--bcher-kva"), ("münchen", "xn--mnchen-3ya"), ("公司", "xn--55qx5d"), ("中国", "xn--fiqs8s"),
        ("東京", "xn--1lqs71d"), ("バス", "xn--zck2b"), ("example", "example"), ("ü", "xn--tda"),
        // RFC 3492 §7.1 (A) Arabic (Egyptian) and (L) "3年B組金八先生", lowercased.
        ("ليهمابتكلموشعربي؟", "xn--egbpdaj6bu4bxfgehfvwxn"), ("3年b組金八先生", "xn--3b-ww4c5e180e575a65lsy2b"),
    ])
    func encodes(label: String, ascii: String) {
        #expect(Punycode.asciiLabel(label) == ascii)
    }
}
