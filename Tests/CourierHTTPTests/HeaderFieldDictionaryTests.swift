import CourierHTTP
import Testing

@Suite("HeaderFieldDictionary")
struct HeaderFieldDictionaryTests {
    @Test(
        "Lookup ignores name case",
        arguments: ["Content-Type", "content-type", "CONTENT-TYPE", "cOnTeNt-TyPe"])
    func caseInsensitiveLookup(name: String) {
        var headers = HeaderFieldDictionary()
        headers["Content-Type"] = "text/html"
        #expect(headers[name] == "text/html")
        #expect(headers.contains(name))
    }

    @Test("Setting keeps the casing and position of the first insertion")
    func keepsFirstCasing() {
        var headers = HeaderFieldDictionary()
        headers["X-First"] = "1"
        headers["Accept"] = "a"
        headers["x-first"] = "2"
        #expect(headers.names == ["X-First", "Accept"])
        #expect(headers["X-FIRST"] == "2")
        #expect(headers.dictionary == ["X-First": "2", "Accept": "a"])
    }

    @Test("Iteration follows insertion order")
    func iterationOrder() {
        var headers = HeaderFieldDictionary()
        for name in ["Zeta", "Alpha", "Mid"] {
            headers[name] = name.lowercased()
        }
        let names = headers.map(\.name)
        let values = headers.map(\.value)
        #expect(names == ["Zeta", "Alpha", "Mid"])
        #expect(values == ["zeta", "alpha", "mid"])
    }

    @Test("Setting nil removes the field")
    func nilRemoves() {
        var headers: HeaderFieldDictionary = ["A": "1", "B": "2"]
        headers["a"] = nil
        #expect(headers["A"] == nil)
        #expect(headers.count == 1)
        headers["missing"] = nil
        #expect(headers.count == 1)
        #expect(headers.removeValue(for: "b") == "2")
        #expect(headers.isEmpty)
    }

    @Test(
        "add joins values with a comma and a space",
        arguments: [
            (["text/html"], "text/html"),
            (["text/html", "application/json"], "text/html, application/json"),
            (["a", "b", "c"], "a, b, c"),
        ])
    func addJoins(values: [String], expected: String) {
        var headers = HeaderFieldDictionary()
        for (index, value) in values.enumerated() {
            headers.add(value, for: index.isMultiple(of: 2) ? "Accept" : "accept")
        }
        #expect(headers["ACCEPT"] == expected)
        #expect(headers.count == 1)
    }

    @Test("Pairs with repeated names are joined in order")
    func pairsJoin() {
        let headers = HeaderFieldDictionary(pairs: [("Vary", "Accept"), ("X", "1"), ("vary", "Origin")])
        #expect(headers["Vary"] == "Accept, Origin")
        #expect(headers.names == ["Vary", "X"])
    }

    @Test(
        "Pairs keep their order and spelling; a name repeated anywhere, in any case, is joined",
        arguments: [
            ([("A", "1"), ("b", "2"), ("C", "3")], [("A", "1"), ("b", "2"), ("C", "3")]),
            ([("A", "1"), ("b", "2"), ("a", "3")], [("A", "1, 3"), ("b", "2")]),
            ([("A", "1"), ("A", "2")], [("A", "1, 2")]),
            (
                [("X", "1"), ("Long-Header-Name-Here", "2"), ("long-header-name-here", "3")],
                [("X", "1"), ("Long-Header-Name-Here", "2, 3")]
            ),
            ([], []),
        ] as [([(String, String)], [(String, String)])])
    func pairsKeepOrder(pairs: [(String, String)], expected: [(String, String)]) {
        let headers = HeaderFieldDictionary(pairs: pairs)
        #expect(headers.pairs.map(\.0) == expected.map(\.0))
        #expect(headers.pairs.map(\.1) == expected.map(\.1))
    }

    @Test("Many pairs keep their order and spelling, repeated names joined, as few pairs do")
    func manyPairsJoinLikeFew() {
        var pairs: [(String, String)] = (0..<(HeaderFieldDictionary.scannedPairLimit * 3)).map { ("X-\($0)", "\($0)") }
        pairs.insert(("x-5", "again"), at: 40)
        pairs.append(("X-5", "last"))
        let headers = HeaderFieldDictionary(pairs: pairs)
        #expect(headers.count == HeaderFieldDictionary.scannedPairLimit * 3)
        #expect(headers["X-5"] == "5, again, last")
        #expect(headers.pairs.first.map { $0.0 } == "X-0")
        #expect(headers.names.filter { $0.lowercased() == "x-5" } == ["X-5"])
    }

    /// A hostile head of up to 1 MiB can carry some 200,000 distinct fields whose names all have one length (the case
    /// a length check does not cut short). Built in linear time this takes well under a second in a debug build;
    /// comparing each name with those before it took minutes. The bound only tells the two apart.
    @Test("A head of 200,000 distinct fields is built in linear time")
    func manyDistinctFieldsAreLinear() {
        let pairs = (0..<200_000).map { ("f\($0 + 1_000_000)", "v") }
        let started = ContinuousClock.now
        let headers = HeaderFieldDictionary(pairs: pairs)
        let elapsed = ContinuousClock.now - started
        #expect(headers.count == 200_000)
        #expect(elapsed < .seconds(30))
    }

    @Test("Equality and hashing ignore order and name case")
    func equality() {
        let lhs: HeaderFieldDictionary = ["Accept": "a", "Host": "h"]
        let rhs: HeaderFieldDictionary = ["host": "h", "ACCEPT": "a"]
        let different: HeaderFieldDictionary = ["Accept": "A", "Host": "h"]
        #expect(lhs == rhs)
        #expect(lhs.hashValue == rhs.hashValue)
        #expect(lhs != different)
        #expect(lhs != ["Accept": "a"])
    }

    @Test("Initialising from a Swift dictionary keeps every field")
    func fromDictionary() {
        let headers = HeaderFieldDictionary(["b": "2", "A": "1", "c": "3"])
        #expect(headers.names == ["A", "b", "c"])
        #expect(headers.count == 3)
        #expect(HeaderFieldDictionary([:]).isEmpty)
    }
}
