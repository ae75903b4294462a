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
        "Hostile names lose their directories",
        arguments: [
            ("attachment; filename=\"../../etc/passwd\"", "passwd"),
            ("attachment; filename=\"..\\\\..\\\\windows\\\\system.ini\"", "system.ini"),
            ("attachment; filename=\"/absolute/path.txt\"", "path.txt"),
            ("attachment; filename*=UTF-8''..%2F..%2Fetc%2Fshadow", "shadow"),
            ("attachment; filename*=UTF-8''..%5Csecret.txt", "secret.txt"),
            ("attachment; filename=\"  spaced.txt  \"", "spaced.txt"),
            ("attachment; filename=\"bell\u{07}.txt\"", "bell.txt"),
        ])
    func hostile(value: String, expected: String) {
        let name = ContentDisposition.filename(from: value)
        #expect(name == expected)
        #expect(name?.contains("/") != true)
        #expect(name?.contains("\\") != true)
    }

    @Test(
        "Unusable names give nil",
        arguments: [
            "attachment",
            "attachment; filename=\"\"",
            "attachment; filename=\".\"",
            "attachment; filename=\"..\"",
            "attachment; filename=\"../\"",
            "attachment; filename=\"a/..\"",
            "attachment; filename*=UTF-8''..",
            "attachment; filename=\"   \"",
            "",
        ])
    func unusable(value: String) {
        #expect(ContentDisposition.filename(from: value) == nil)
    }
}
