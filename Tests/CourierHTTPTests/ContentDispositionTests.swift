import CourierHTTP
import Testing

@Suite("ContentDisposition")
struct ContentDispositionTests {
    @Test(
        "Extracts the file name",
        arguments: [
            ("attachment; filename=\"report.pdf\"", "report.pdf"),
            ("attachment; filename=report.pdf", "report.pdf"),
            ("inline; FILENAME=\"a b.txt\"", "a b.txt"),
            ("attachment; filename=\"quo\\\"te.txt\"", "quo\"te.txt"),
            ("attachment; filename*=UTF-8''%E2%82%AC%20rates.txt", "€ rates.txt"),
            ("attachment; filename=\"fallback.txt\"; filename*=UTF-8''pr%C3%A9f%C3%A9r%C3%A9.txt", "préféré.txt"),
            ("attachment; filename*=iso-8859-1'en'%A3%20rates.txt", "£ rates.txt"),
            ("attachment; filename*=UTF-8''%ZZ; filename=\"plain.txt\"", "plain.txt"),
            ("attachment; filename*=UTF-8''%FF%FE; filename=\"valid.txt\"", "valid.txt"),
            ("attachment; filename*=KOI8-R''%C1; filename=\"other.txt\"", "other.txt"),
        ])
    func extracts(value: String, expected: String) {
        #expect(ContentDisposition.filename(from: value) == expected)
    }

    @Test(
        "Path separators become underscores and leading dots go",
        arguments: [
            ("attachment; filename=\"../../etc/passwd\"", "_.._etc_passwd"),
            ("attachment; filename=\"..\\\\..\\\\windows\\\\system.ini\"", "_.._windows_system.ini"),
            ("attachment; filename=\"/absolute/path.txt\"", "_absolute_path.txt"),
            ("attachment; filename=\"/a/b/name\"", "_a_b_name"),
            ("attachment; filename=\"a/../b/name\"", "a_.._b_name"),
            ("attachment; filename*=UTF-8''..%2F..%2Fetc%2Fshadow", "_.._etc_shadow"),
            ("attachment; filename*=UTF-8''..%5Csecret.txt", "_secret.txt"),
            ("attachment; filename=\".bashrc\"", "bashrc"),
            ("attachment; filename=\"../\"", "_"),
            ("attachment; filename=\"  spaced.txt  \"", "spaced.txt"),
            ("attachment; filename=\"bell\u{07}.txt\"", "bell.txt"),
        ])
    func hostile(value: String, expected: String) {
        let name = ContentDisposition.filename(from: value)
        #expect(name == expected)
        #expect(name?.contains("/") != true)
        #expect(name?.contains("\\") != true)
        #expect(name?.hasPrefix(".") != true)
    }

    @Test(
        "Quoted strings and escapes are read before parameters are split (FoundationNetworking's cases)",
        arguments: [
            ("attachment; filename=\"aa=bb\\;\"", "aa=bb;"),
            ("attachment; filename=\";.ext\"", ";.ext"),
            ("attachment; filename=genome.jpeg; modification-date=\"Wed, 12 Feb 1997 16:29:51 -0500\";", "genome.jpeg"),
            ("attachment; aa=bb\\; filename=\"wrong.ext\"; filename=\"fname.ext\"; cc=dd", "fname.ext"),
            ("attachment; filename=\"a\\\"b;c.txt\"; x=y", "a\"b;c.txt"),
        ])
    func escapes(value: String, expected: String) {
        #expect(ContentDisposition.filename(from: value) == expected)
    }

    @Test(
        "No hidden name behind spaces",
        arguments: [
            ("attachment; filename=\". .bashrc\"", "bashrc"), ("attachment; filename=\" ..profile\"", "profile"),
        ])
    func hiddenBehindSpaces(value: String, expected: String) {
        #expect(ContentDisposition.filename(from: value) == expected)
    }

    @Test(
        "Unusable names give nil",
        arguments: [
            "attachment",
            "attachment; filename=\"\"",
            "attachment; filename=\".\"",
            "attachment; filename=\"..\"",
            "attachment; filename=\"...\"",
            "attachment; filename*=UTF-8''..",
            "attachment; filename=\"   \"",
            // Dots and spaces mixed: dropping one kind used to uncover the other.
            "attachment; filename=\". .\"",
            "attachment; filename=\"..  ..\"",
            "attachment; filename=\" . . . \"",
            "",
        ])
    func unusable(value: String) {
        #expect(ContentDisposition.filename(from: value) == nil)
    }
}
