import Foundation

/// The Basic scheme (RFC 7617): the user and password, UTF-8 encoded, in Base64.
public enum BasicAuthentication {
    /// The `Authorization` value for `user` and `password`, or `nil` when the user name contains a colon (RFC 7617
    /// §2 forbids it: the server would split the pair at that colon) or a control character.
    public static func authorizationValue(user: String, password: String) -> String? {
        guard !user.contains(":"),
            !(user + password).unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
        else { return nil }
        return "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
    }
}
