/// Checks on header field values before they are written.
public enum FieldValue {
    /// Whether `URLRequest.setValue(_:forHTTPHeaderField:)` and `addValue(_:forHTTPHeaderField:)` accept `value`
    /// (FoundationNetworking's rule): no NUL, and a CR or LF only as part of a line fold, CR LF followed by a space
    /// or a tab (`obs-fold`, RFC 9112 §5.2). Anything else could end the field and smuggle in another.
    public static func isValidRequestValue(_ value: String) -> Bool {
        unfolded(value) != nil
    }

    /// The value as it may be written to the wire: each line fold loses its CR LF (the space or tab after it stays,
    /// as RFC 9112 §5.2 lets a recipient do), because a sender must not generate `obs-fold`.
    ///
    /// - Parameter value: A field value.
    /// - Returns: The unfolded value, or `nil` when it holds a NUL, or a CR or LF outside a line fold.
    public static func unfolded(_ value: String) -> String? {
        // The common case, checked without copying: nothing to unfold.
        guard value.utf8.contains(where: { $0 == 0x0A || $0 == 0x0D || $0 == 0x00 }) else { return value }
        let bytes = Array(value.utf8)
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            switch bytes[index] {
            case 0x00, 0x0A:
                return nil
            case 0x0D:
                guard index + 2 < bytes.count, bytes[index + 1] == 0x0A,
                    bytes[index + 2] == 0x20 || bytes[index + 2] == 0x09
                else { return nil }
                index += 2
            default:
                result.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: result, as: UTF8.self)
    }
}
