/// Punycode (RFC 3492), the encoding that gives an internationalized domain label its ASCII form (`公司` →
/// `xn--55qx5d`, IDNA's A-label). Encoding only: Courier needs it to match the Public Suffix List's Unicode rules
/// against host names, which arrive in ASCII.
public enum Punycode {
    private static let base = 36
    private static let tMin = 1
    private static let tMax = 26
    private static let skew = 38
    private static let damp = 700
    private static let initialBias = 72
    private static let initialN = 128

    /// The ASCII form of one label: the label itself when it is ASCII, else `xn--` and its Punycode. `nil` when its
    /// encoding would overflow RFC 3492's 32-bit counters, which no real domain label comes near.
    public static func asciiLabel(_ label: String) -> String? {
        guard !label.unicodeScalars.allSatisfy(\.isASCII) else { return label }
        return encode(label).map { "xn--" + $0 }
    }

    /// The Punycode of `input`'s Unicode scalars (RFC 3492 §6.3), without the `xn--` prefix.
    public static func encode(_ input: String) -> String? {
        let scalars = input.unicodeScalars.map { Int($0.value) }
        var output = input.unicodeScalars.filter(\.isASCII).map(Character.init)
        let basicCount = output.count
        var handled = basicCount
        if basicCount > 0 { output.append("-") }
        var n = initialN
        var delta = 0
        var bias = initialBias
        while handled < scalars.count {
            // The smallest code point not handled yet.
            guard let next = scalars.filter({ $0 >= n }).min() else { return nil }
            let (increment, overflow) = (next - n).multipliedReportingOverflow(by: handled + 1)
            guard !overflow, delta <= Int(Int32.max) - increment else { return nil }
            delta += increment
            n = next
            for scalar in scalars {
                if scalar < n {
                    delta += 1
                    guard delta <= Int(Int32.max) else { return nil }
                }
                guard scalar == n else { continue }
                var q = delta
                var k = base
                while true {
                    let t = k <= bias ? tMin : (k >= bias + tMax ? tMax : k - bias)
                    if q < t { break }
                    output.append(digit(t + (q - t) % (base - t)))
                    q = (q - t) / (base - t)
                    k += base
                }
                output.append(digit(q))
                bias = adapt(delta, count: handled + 1, first: handled == basicCount)
                delta = 0
                handled += 1
            }
            delta += 1
            n += 1
        }
        return String(output)
    }

    /// RFC 3492 §6.1's bias adaptation.
    private static func adapt(_ delta: Int, count: Int, first: Bool) -> Int {
        var delta = first ? delta / damp : delta / 2
        delta += delta / count
        var k = 0
        while delta > ((base - tMin) * tMax) / 2 {
            delta /= base - tMin
            k += base
        }
        return k + (base - tMin + 1) * delta / (delta + skew)
    }

    private static func digit(_ value: Int) -> Character {
        Character(Unicode.Scalar(UInt8(value < 26 ? 97 + value : 22 + value)))
    }
}
