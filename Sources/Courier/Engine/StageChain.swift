import CourierHTTP
import CourierTransport
import Foundation

/// The stage chain of every attempt, written out in one place (OkHttp's `getResponseWithInterceptorChain` is the
/// model): the request side prepares the request or answers it, a response source produces the response, and the
/// response side decides what becomes of it.
///
/// ```
/// request:   URLProtocol lookup → data:/file: → URL validation → default headers → cookies → credentials → cache lookup
/// source:    the network (or a stage's answer: cache, URLProtocol, data:/file:)
/// response:  cookie storage → cache invalidation → authentication → redirect → cache storage → app's disposition
/// ```
///
/// Credentials come before the cache lookup: the lookup records the request the response will be stored against,
/// and a credential sent ahead must be in it, or the cache would store (and serve to requests without it) a response
/// to an `Authorization` request that RFC 9111 §3.5 keeps out, and record `Vary: Authorization` against a request
/// without the field.
///
/// Cookie storage comes first on the response side: the cookies of every response are stored, also of a redirect
/// or a challenge that ends the side with a follow-up (a login's `302` sets the session cookie the next request
/// must carry). Cache invalidation comes before redirects for the same reason: a `POST` answered with a `303` changed
/// the resource the `GET` that follows asks for. Authentication comes before redirects too: a credential answered
/// with a redirect worked, and is settled (stored, its space remembered) before the redirect takes it off the request,
/// or a challenge after the redirect took it for a credential that failed.
///
/// The cache and credential stages are identity stages until the cache and authentication features land; each
/// feature adds its work to exactly one stage or source.
enum StageChain {
    static let requestStages: [any RequestStage] = [
        ProtocolLookupStage(),
        LocalSchemeStage(),
        URLValidationStage(),
        HeaderDefaultsStage(),
        CookieStage(),
        CredentialStage(),
        CacheLookupStage(),
    ]

    static let responseStages: [any ResponseStage] = [
        CookieStorageStage(),
        CacheInvalidationStage(),
        AuthenticationStage(),
        RedirectStage(),
        CacheStorageStage(),
        DispositionStage(),
    ]

    /// Runs the request side over `request`. Stages that answer at once run here, on the caller's executor, and
    /// their outcome is returned; from the first stage that must wait, the rest is returned as a ``ChainRun/waits(_:)``
    /// to be started with a completion (the common path allocates no closure).
    static func runRequestSide(
        _ request: URLRequest,
        stages: [any RequestStage] = requestStages,
        context: StageContext
    ) -> ChainRun<RequestStep> {
        var current = request
        for index in stages.indices {
            do {
                switch try stages[index].immediate(current, in: context) {
                case .proceed(let next)?:
                    current = next
                case .respond(let source)?:
                    return .done(.success(.respond(source)))
                case nil:
                    let rest = Array(stages[index...])
                    let waiting = current
                    return .waits { completion in
                        Task(executorPreference: StageExecutor.shared) {
                            completion(await runWaiting(waiting, stages: rest, context: context))
                        }
                    }
                }
            } catch {
                return .done(.failure(error))
            }
        }
        return .done(.success(.proceed(current)))
    }

    private static func runWaiting(
        _ request: URLRequest,
        stages: [any RequestStage],
        context: StageContext
    ) async -> Result<RequestStep, TransferError> {
        var current = request
        do {
            for stage in stages {
                // A stage does its waiting work only when it cannot answer at once.
                let step: RequestStep
                if let immediate = try stage.immediate(current, in: context) {
                    step = immediate
                } else {
                    step = try await stage.process(current, in: context)
                }
                switch step {
                case .proceed(let next): current = next
                case .respond(let source): return .success(.respond(source))
                }
            }
        } catch {
            return .failure(error)
        }
        return .success(.proceed(current))
    }

    /// Whether every response stage surely lets `response` through unchanged (each stage's
    /// ``ResponseStage/passes(_:_:)``): the engine then delivers it without running the side, as it does for most
    /// responses.
    static func responseSidePasses(
        _ response: URLResponse,
        _ facts: ResponseStageFacts,
        stages: [any ResponseStage] = responseStages
    ) -> Bool {
        for stage in stages where !type(of: stage).passes(response, facts) { return false }
        return true
    }

    /// Runs the response side over `response`, with the same split as ``runRequestSide(_:stages:context:)``.
    /// A stage that asks for a follow-up ends the side; `.proceedAsDownload` is carried to the end.
    static func runResponseSide(
        _ response: URLResponse,
        stages: [any ResponseStage] = responseStages,
        context: StageContext
    ) -> ChainRun<ResponseStep> {
        var current = response
        var asDownload = false
        for index in stages.indices {
            do {
                switch try stages[index].immediate(current, in: context) {
                case .proceed(let next)?:
                    current = next
                case .proceedAsDownload(let next)?:
                    current = next
                    asDownload = true
                case .followUp(let request, let dropsBody)?:
                    return .done(.success(.followUp(request, dropsBody: dropsBody)))
                case .retry(let request)?:
                    return .done(.success(.retry(request)))
                case .proceedAsStream(let next)?:
                    return .done(.success(.proceedAsStream(next)))
                case nil:
                    let rest = Array(stages[index...])
                    let waiting = current
                    let wasDownload = asDownload
                    return .waits { completion in
                        Task(executorPreference: StageExecutor.shared) {
                            completion(
                                await runWaiting(waiting, asDownload: wasDownload, stages: rest, context: context))
                        }
                    }
                }
            } catch {
                return .done(.failure(error))
            }
        }
        return .done(.success(asDownload ? .proceedAsDownload(current) : .proceed(current)))
    }

    private static func runWaiting(
        _ response: URLResponse,
        asDownload: Bool,
        stages: [any ResponseStage],
        context: StageContext
    ) async -> Result<ResponseStep, TransferError> {
        var current = response
        var asDownload = asDownload
        do {
            for stage in stages {
                let step: ResponseStep
                if let immediate = try stage.immediate(current, in: context) {
                    step = immediate
                } else {
                    step = try await stage.process(current, in: context)
                }
                switch step {
                case .proceed(let next):
                    current = next
                case .proceedAsDownload(let next):
                    current = next
                    asDownload = true
                case .followUp(let request, let dropsBody):
                    return .success(.followUp(request, dropsBody: dropsBody))
                case .retry(let request):
                    return .success(.retry(request))
                case .proceedAsStream(let next):
                    return .success(.proceedAsStream(next))
                }
            }
        } catch {
            return .failure(error)
        }
        return .success(asDownload ? .proceedAsDownload(current) : .proceed(current))
    }
}

/// Where a side of the chain stands once its stages that answer at once have run.
enum ChainRun<Step: Sendable>: Sendable {
    /// Every stage answered at once: the side's outcome.
    case done(Result<Step, TransferError>)
    /// A stage must wait: starting this runs the rest in a Swift task, off the caller's executor, and calls the
    /// completion once with the outcome.
    case waits(@Sendable (_ completion: @escaping @Sendable (Result<Step, TransferError>) -> Void) -> Void)
}
