import CourierHTTP
import Foundation

/// Credentials (request side): a request into a Basic protection space the session already authenticated in
/// (see ``AuthenticatedSpaces``) carries the credential that worked there at once, as on Darwin, instead of drawing
/// a 401 first. A request that sets its own `Authorization` keeps it, and one whose URL names a user
/// (`https://bob:secret@host/`) is left to the challenge, where that user's credential is proposed: sending the
/// space's remembered credential ahead made it another user's request.
///
/// Courier's own `URLCredentialStorage` is read at once; an app's subclass is user code, so the stage then waits.
struct CredentialStage: RequestStage {
    func immediate(_ request: URLRequest, in context: StageContext) throws(TransferError) -> RequestStep? {
        guard let entry = Self.entry(for: request, in: context),
            let storage = context.configuration.urlCredentialStorage
        else { return .proceed(request) }
        guard type(of: storage) == URLCredentialStorage.self else { return nil }
        return .proceed(Self.authorize(request, with: Self.credential(for: entry, in: storage)))
    }

    func process(_ request: URLRequest, in context: StageContext) async throws(TransferError) -> RequestStep {
        guard let entry = Self.entry(for: request, in: context),
            let storage = context.configuration.urlCredentialStorage
        else { return .proceed(request) }
        return .proceed(Self.authorize(request, with: Self.credential(for: entry, in: storage)))
    }

    private static func entry(for request: URLRequest, in context: StageContext) -> AuthenticatedSpaces.Entry? {
        guard let spaces = context.authenticatedSpaces, !spaces.isEmpty, let url = request.url,
            request.value(forHTTPHeaderField: "Authorization") == nil, url.user(percentEncoded: false) == nil
        else { return nil }
        return spaces.entry(for: url)
    }

    /// The stored credential of the user that worked in the space (not the space's default, which may be another
    /// user's that the server refuses: it would draw a 401, and the delegate's question, on every request); the
    /// default when no user was remembered.
    static func credential(for entry: AuthenticatedSpaces.Entry, in storage: URLCredentialStorage) -> URLCredential? {
        let space = entry.space.protectionSpace
        guard let user = entry.user else { return storage.defaultCredential(for: space) }
        return storage.credentials(for: space)?[user]
    }

    private static func authorize(_ request: URLRequest, with credential: URLCredential?) -> URLRequest {
        guard let user = credential?.user, let password = credential?.password,
            let value = BasicAuthentication.authorizationValue(user: user, password: password)
        else { return request }
        var authorized = request
        authorized.setValue(value, forHTTPHeaderField: "Authorization")
        return authorized
    }
}
