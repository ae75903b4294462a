/// What a proxy's refusal of a `CONNECT` tunnel may carry to the request it was opened for.
///
/// The refusal comes from the proxy, not from the origin the request names, over a connection that is usually plain
/// HTTP even when the request is `https`. Only the proxy's own authentication survives it: a `407`'s
/// `Proxy-Authenticate` challenges, which the authentication stage answers on the next `CONNECT`. Everything else the
/// proxy said — `Set-Cookie`, `Location`, `WWW-Authenticate`, `Cache-Control`, `Vary`… — would otherwise be taken as
/// the origin's: cookies stored for the `https` origin (even `Secure` ones), a redirect followed as the origin's, a
/// password asked for in the origin's name, a response cached for the origin's URL. Browsers, curl, Go and OkHttp
/// never read a refused tunnel's answer as the origin's.
public enum TunnelRefusal {
    /// The header fields of the response that stands for a refusal with `status` and the proxy's `headers`: a
    /// `407`'s `Proxy-Authenticate` fields, then `Cache-Control: no-store` (the refusal describes no resource and is
    /// never stored for the origin's URL) and `Content-Length: 0` (its body is not read).
    public static func responseFields(status: Int, headers: [(String, String)]) -> [(String, String)] {
        var fields: [(String, String)] = []
        if status == 407 {
            fields = headers.filter { HeaderName.equal($0.0, "Proxy-Authenticate") }
        }
        fields.append(("Cache-Control", "no-store"))
        fields.append(("Content-Length", "0"))
        return fields
    }
}
