import CourierHTTP
import Foundation

/// Credentials (request side): a request into a Basic protection space the session already authenticated in
/// (see ``AuthenticatedSpaces``) carries the storage's default credential for it at once, as on Darwin, instead of
/// drawing a 401 first. A request that sets its own `Authorization` keeps it.
///
/// Courier's own `URLCredentialStorage` is read at once; an app's subclass is user code, so the stage then waits.
struct CredentialStage: RequestStage {
    func immediate(_ request: URLRequest, in context: StageContext) throws(TransferError) -> RequestStep? {
        guard let space = Self.space(for: request, in: context),
            let storage = context.configuration.urlCredentialStorage
        else { return .proceed(request) }
        guard type(of: storage) == URLCredentialStorage.self else { return nil }
        return .proceed(Self.authorize(request, with: storage.defaultCredential(for: space.protectionSpace)))
    }

    func process(_ request: URLRequest, in context: StageContext) async throws(TransferError) -> RequestStep {
        guard let space = Self.space(for: request, in: context),
            let storage = context.configuration.urlCredentialStorage
        else { return .proceed(request) }
        return .proceed(Self.authorize(request, with: storage.defaultCredential(for: space.protectionSpace)))
    }

    private static func space(for request: URLRequest, in context: StageContext) -> AuthenticationQuestion.Space? {
        guard let spaces = context.authenticatedSpaces, !spaces.isEmpty, let url = request.url,
            request.value(forHTTPHeaderField: "Authorization") == nil
        else { return nil }
        return spaces.space(for: url)
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
