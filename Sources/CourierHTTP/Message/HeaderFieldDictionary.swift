/// An ordered collection of HTTP header fields whose names compare case-insensitively.
///
/// The dictionary keeps the spelling of a name as it was first inserted and the order in which names were first
/// inserted. Setting a value for a name that is already present (in any casing) replaces the value in place.
///
/// Equality and hashing ignore the order of fields and the casing of names, because HTTP gives neither any meaning.
public struct HeaderFieldDictionary: Hashable, Sendable, Sequence, ExpressibleByDictionaryLiteral {
    /// One header field as stored: the name in its first-inserted casing, and the value.
    public typealias Element = (name: String, value: String)

    /// Name and value, in order. Unlabelled pairs, the transport's own form of header fields: ``pairs`` hands the
    /// array over without copying it.
    private var fields: [(String, String)] = []

    /// Creates an empty header field dictionary.
    public init() {}

    /// Creates a header field dictionary from a Swift dictionary.
    ///
    /// Because a Swift dictionary has no order, the fields are inserted in ascending order of their lowercased names,
    /// which keeps the result deterministic. When two keys differ only by case, the value of the key that sorts last
    /// wins and the name of the one that sorts first is kept.
    ///
    /// - Parameter dictionary: The header fields to insert.
    public init(_ dictionary: [String: String]) {
        let sorted = dictionary.sorted { lhs, rhs in
            let left = HeaderName.canonical(lhs.key)
            let right = HeaderName.canonical(rhs.key)
            return left == right ? lhs.key < rhs.key : left < right
        }
        for (name, value) in sorted {
            self[name] = value
        }
    }

    /// Creates a header field dictionary from ordered name–value pairs.
    ///
    /// A name that occurs more than once has its values joined with `", "`, in order, as HTTP allows for repeated
    /// fields.
    ///
    /// - Parameter pairs: The header fields in the order they were received.
    public init(pairs: [(String, String)]) {
        if pairs.count > Self.scannedPairLimit {
            fields = Self.joiningRepeatedNames(pairs)
        } else if !Self.repeatsAName(pairs) {
            // Most heads repeat no name: their pairs are kept as they are, sharing the array's storage instead of
            // copying (and retaining) every name and value into a new one.
            fields = pairs
        } else {
            fields.reserveCapacity(pairs.count)
            for (name, value) in pairs {
                add(value, for: name)
            }
        }
    }

    /// Up to this many pairs, names are compared with the earlier ones directly (no allocation); beyond, by a hash
    /// of their canonical form. A head of up to 1 MiB can carry some 200,000 fields, and comparing each with those
    /// before it would keep the event loop busy for minutes.
    package static let scannedPairLimit = 32

    /// `pairs` with the values of a repeated name joined into its first field, in linear time: one hash lookup per
    /// field.
    private static func joiningRepeatedNames(_ pairs: [(String, String)]) -> [(String, String)] {
        var indexByName: [String: Int] = [:]
        var fields: [(String, String)] = []
        fields.reserveCapacity(pairs.count)
        for (name, value) in pairs {
            let key = HeaderName.canonical(name)
            if let index = indexByName[key] {
                fields[index].1 += ", " + value
            } else {
                indexByName[key] = fields.count
                fields.append((name, value))
            }
        }
        return fields
    }

    /// Whether two of `pairs` have the same name (ignoring case).
    private static func repeatsAName(_ pairs: [(String, String)]) -> Bool {
        for later in pairs.indices.dropFirst() {
            for earlier in 0..<later where HeaderName.equal(pairs[earlier].0, pairs[later].0) {
                return true
            }
        }
        return false
    }

    /// Creates a header field dictionary from a dictionary literal, keeping the literal's order.
    ///
    /// - Parameter elements: The name–value pairs of the literal.
    public init(dictionaryLiteral elements: (String, String)...) {
        for (name, value) in elements {
            self[name] = value
        }
    }

    /// The number of header fields.
    /// The fields in order, as the transport takes them (the same storage: no copy is made).
    public var pairs: [(String, String)] { fields }

    public var count: Int { fields.count }

    /// Whether the dictionary contains no header field.
    public var isEmpty: Bool { fields.isEmpty }

    /// The header field names in insertion order, in their first-inserted casing.
    public var names: [String] { fields.map(\.0) }

    /// The header fields as a Swift dictionary keyed by name in its first-inserted casing.
    public var dictionary: [String: String] {
        var result: [String: String] = [:]
        result.reserveCapacity(fields.count)
        for (name, value) in fields {
            result[name] = value
        }
        return result
    }

    /// The value of the header field with the given name, compared case-insensitively.
    ///
    /// Setting a value replaces the value of an existing field (keeping its name's casing and position) or appends a
    /// new field. Setting `nil` removes the field.
    ///
    /// - Parameter name: The header field name.
    public subscript(name: String) -> String? {
        get {
            index(of: name).map { fields[$0].1 }
        }
        set {
            let existing = index(of: name)
            switch (existing, newValue) {
            case (let index?, let value?):
                fields[index].1 = value
            case (let index?, nil):
                fields.remove(at: index)
            case (nil, let value?):
                fields.append((name, value))
            case (nil, nil):
                break
            }
        }
    }

    /// Adds a value to a header field, joining it to an existing value with `", "`.
    ///
    /// This mirrors `URLRequest.addValue(_:forHTTPHeaderField:)`: when the field is absent it is created with the
    /// value; when present, the value is appended after a comma and a space.
    ///
    /// - Parameters:
    ///   - value: The value to add.
    ///   - name: The header field name, compared case-insensitively.
    public mutating func add(_ value: String, for name: String) {
        if let index = index(of: name) {
            fields[index].1 += ", " + value
        } else {
            fields.append((name, value))
        }
    }

    /// Makes room for `capacity` fields, so that adding several allocates once.
    public mutating func reserveCapacity(_ capacity: Int) {
        fields.reserveCapacity(capacity)
    }

    /// Removes the header field with the given name and returns its value.
    ///
    /// - Parameter name: The header field name, compared case-insensitively.
    /// - Returns: The removed value, or `nil` if the field was absent.
    @discardableResult
    public mutating func removeValue(for name: String) -> String? {
        guard let index = index(of: name) else { return nil }
        return fields.remove(at: index).1
    }

    /// Whether a header field with the given name is present.
    ///
    /// - Parameter name: The header field name, compared case-insensitively.
    public func contains(_ name: String) -> Bool {
        index(of: name) != nil
    }

    /// Returns an iterator over the header fields in insertion order.
    public func makeIterator() -> Iterator {
        Iterator(base: fields.makeIterator())
    }

    /// An iterator over the fields of a ``HeaderFieldDictionary`` in insertion order.
    public struct Iterator: IteratorProtocol {
        fileprivate var base: IndexingIterator<[(String, String)]>

        /// Returns the next header field, or `nil` at the end.
        public mutating func next() -> (name: String, value: String)? {
            base.next().map { (name: $0.0, value: $0.1) }
        }
    }

    /// Whether two dictionaries hold the same values for the same names, ignoring order and name casing.
    public static func == (lhs: HeaderFieldDictionary, rhs: HeaderFieldDictionary) -> Bool {
        guard lhs.fields.count == rhs.fields.count else { return false }
        for (name, value) in lhs.fields where rhs[name] != value {
            return false
        }
        return true
    }

    /// Hashes the fields, ignoring order and name casing, consistently with `==`.
    public func hash(into hasher: inout Hasher) {
        let canonical = fields.map { (HeaderName.canonical($0.0), $0.1) }.sorted { $0.0 < $1.0 }
        hasher.combine(canonical.count)
        for (name, value) in canonical {
            hasher.combine(name)
            hasher.combine(value)
        }
    }

    private func index(of name: String) -> Int? {
        fields.firstIndex { HeaderName.equal($0.0, name) }
    }
}
