import CourierMockServer
import CourierTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import Courier

extension BackgroundSuites {
    /// What an app does with its background tasks: uploads from a file, delayed starts, cancelling (with resume data),
    /// suspending, invalidating, and many tasks in several sessions.
    @Suite("Background sessions: tasks", .serialized)
    struct BackgroundTaskTests {
        /// An upload from a file runs in the daemon; the server receives the file's bytes.
        @Test func anUploadFromAFileRunsInTheDaemon() async throws {
            try await withBackgroundServer { fixture, server in
                server.route("/upload", response: .ok("stored"))
                let file = fixture.root.appendingPathComponent("body.bin")
                let body = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
                try body.write(to: file)
                let recorder = BackgroundRecorder()
                let session = await fixture.session("app.upload", delegate: recorder)
                var request = URLRequest(url: server.url("/upload"))
                request.httpMethod = "POST"
                let task = session.uploadTask(with: request, fromFile: file)
                task.resume()
                await recorder.waitForCompletions(1)
                #expect(recorder.errors[task.taskIdentifier] == .some(nil), "\(fixture.daemonLog)")
                #expect(server.requests(path: "/upload").first?.body == body)
                #expect((task.response as? HTTPURLResponse)?.statusCode == 200)
                #expect(task.countOfBytesSent == 300_000)
                // The server's answer reaches the delegate as an in-process upload's would, before the completion.
                #expect(recorder.received(task.taskIdentifier) == Data("stored".utf8))
                #expect(recorder.events == ["data 1", "completed 1 0"])
                session.invalidateAndCancel()
            }
        }

        /// `earliestBeginDate` is honoured by the daemon: nothing is sent before it.
        @Test func theDaemonWaitsForTheEarliestBeginDate() async throws {
            try await withBackgroundServer { fixture, server in
                let asked = NIOLockedValueBox<Date?>(nil)
                server.serveResource("/file", body: .pattern(length: 1000)) { _, _ in
                    asked.withLockedValue { $0 = $0 ?? Date() }
                }
                let recorder = BackgroundRecorder()
                let session = await fixture.session("app.later", delegate: recorder)
                let task = session.downloadTask(with: server.url("/file"))
                let start = Date()
                task.earliestBeginDate = start.addingTimeInterval(1)
                task.resume()
                await recorder.waitForCompletions(1)
                let requested = try #require(asked.withLockedValue { $0 }, "\(fixture.daemonLog)")
                #expect(requested.timeIntervalSince(start) >= 0.95)
                #expect(
                    bytesAre(recorder.finished.first?.bytes ?? Data(), MockBody.patternBytes(offset: 0, count: 1000)))
                session.invalidateAndCancel()
            }
        }

        /// `cancel(byProducingResumeData:)` in the daemon gives resume data; a new background task from it asks for
        /// the rest and the file is whole.
        @Test func resumeDataFromTheDaemonContinuesThere() async throws {
            try await withBackgroundServer { fixture, server in
                BackgroundRecoveryTests.serveStalling(server)
                let recorder = BackgroundRecorder()
                let session = await fixture.session("app.resume", delegate: recorder)
                let first = session.downloadTask(with: server.url("/file"))
                first.resume()
                await BackgroundRecoveryTests.waitUntil { recorder.bytesWritten(1) > 1_000_000 }
                let resumeData = await first.cancelByProducingResumeData()
                let data = try #require(resumeData, "\(fixture.daemonLog)")
                await recorder.waitForCompletions(1)
                #expect(recorder.errors[1]??.code == .cancelled)
                let second = session.downloadTask(withResumeData: data)
                second.resume()
                await recorder.waitForCompletions(2)
                #expect(recorder.errors[second.taskIdentifier] == .some(nil), "\(fixture.daemonLog)")
                let finished = try #require(recorder.finished.first { $0.task == second.taskIdentifier })
                #expect(
                    bytesAre(
                        finished.bytes, MockBody.patternBytes(offset: 0, count: Int(BackgroundRecoveryTests.length))))
                #expect(server.requests(path: "/file").last?.header("Range")?.hasPrefix("bytes=") == true)
                session.invalidateAndCancel()
            }
        }

        /// `invalidateAndCancel` cancels the session's tasks in the daemon: a new session finds none.
        @Test func invalidateAndCancelCancelsInTheDaemon() async throws {
            try await withBackgroundServer { fixture, server in
                BackgroundRecoveryTests.serveStalling(server)
                let recorder = BackgroundRecorder()
                let session = await fixture.session("app.cancel", delegate: recorder)
                session.downloadTask(with: server.url("/file")).resume()
                session.downloadTask(with: server.url("/file")).resume()
                await BackgroundRecoveryTests.waitUntil { recorder.bytesWritten(1) > 100_000 }
                session.invalidateAndCancel()
                await recorder.waitForCompletions(2)
                #expect(recorder.errors.count == 2)
                #expect(recorder.errors.values.allSatisfy { $0?.code == .cancelled })
                // The daemon cancelled them and, once their events were acknowledged, forgot them.
                await BackgroundRecoveryTests.waitUntil {
                    guard
                        case .listed(let tasks) = try? BackgroundControl.ask(
                            .list(identifier: "app.cancel"), environment: fixture.environment)
                    else { return false }
                    return tasks.isEmpty
                }
                let next = await fixture.session("app.cancel", delegate: BackgroundRecorder())
                #expect(await next.allTasks.isEmpty, "\(fixture.daemonLog)")
                next.invalidateAndCancel()
            }
        }

        /// A suspended background task stops receiving; resumed, it completes.
        @Test func suspendAndResumeReachTheDaemon() async throws {
            try await withBackgroundServer { fixture, server in
                BackgroundRecoveryTests.serveSlowly(server)
                let recorder = BackgroundRecorder()
                let session = await fixture.session("app.suspend", delegate: recorder)
                let task = session.downloadTask(with: server.url("/file"))
                task.resume()
                await BackgroundRecoveryTests.waitUntil { recorder.bytesWritten(1) > 500_000 }
                task.suspend()
                try await Task.sleep(for: .milliseconds(300))
                let paused = recorder.bytesWritten(1)
                try await Task.sleep(for: .milliseconds(500))
                #expect(recorder.bytesWritten(1) - paused < 1_000_000)
                #expect(task.state == .suspended)
                task.resume()
                await recorder.waitForCompletions(1)
                #expect(recorder.finished.first?.bytes.count == Int(BackgroundRecoveryTests.length))
                session.invalidateAndCancel()
            }
        }

        /// Tasks whose resource timeout passed while they waited end as they are picked, and leave their slots to the
        /// next ready task in the same round (it used to wait for some later event).
        @Test func expiredTasksLeaveTheirSlotsToTheNextReadyOne() async throws {
            try await withBackgroundServer { fixture, server in
                server.serveResource("/small", body: .pattern(length: 100))
                let start = Date().addingTimeInterval(1.5)
                let short = fixture.configuration("app.expiring")
                short.timeoutIntervalForResource = 1
                let expiring = BackgroundRecorder()
                let first = await fixture.session(short, delegate: expiring)
                for _ in 0..<4 {
                    let task = first.downloadTask(with: server.url("/small"))
                    task.earliestBeginDate = start
                    task.resume()
                }
                let patient = BackgroundRecorder()
                let second = await fixture.session("app.patient", delegate: patient)
                let task = second.downloadTask(with: server.url("/small"))
                task.earliestBeginDate = start
                task.resume()
                await expiring.waitForCompletions(4)
                #expect(expiring.errors.count == 4)
                #expect(expiring.errors.values.allSatisfy { $0?.code == .timedOut }, "\(fixture.daemonLog)")
                await patient.waitForCompletions(1, timeout: .seconds(20))
                #expect(patient.errors[1] == .some(nil), "\(fixture.daemonLog)")
                first.invalidateAndCancel()
                second.invalidateAndCancel()
            }
        }

        /// 1,000 downloads queued across three identifiers: every one completes, each session sees only its own.
        /// (It took 33 s while the daemon copied and sorted every task record whenever an attempt ended; 7 s since.)
        @Test func aThousandDownloadsInThreeSessions() async throws {
            try await withBackgroundServer { fixture, server in
                server.serveResource("/small", body: .pattern(length: 2048))
                let identifiers = ["app.a", "app.b", "app.c"]
                var sessions: [(URLSession, BackgroundRecorder, Int)] = []
                for (index, identifier) in identifiers.enumerated() {
                    let recorder = BackgroundRecorder()
                    let session = await fixture.session(identifier, delegate: recorder)
                    let count = index == 0 ? 334 : 333
                    for _ in 0..<count { session.downloadTask(with: server.url("/small")).resume() }
                    sessions.append((session, recorder, count))
                }
                for (session, recorder, count) in sessions {
                    await recorder.waitForCompletions(count, timeout: .seconds(120))
                    #expect(recorder.errors.count == count, "\(fixture.daemonLog.suffix(2000))")
                    #expect(recorder.errors.values.allSatisfy { $0 == nil })
                    #expect(recorder.finished.allSatisfy { $0.bytes == MockBody.patternBytes(offset: 0, count: 2048) })
                    #expect(Set(recorder.finished.map(\.task)) == Set(1...count))
                    session.invalidateAndCancel()
                }
                #expect(server.requests(path: "/small").count == 1000)
            }
        }

        /// The session's TLS settings travel with the task: over HTTPS with HTTP/2, the daemon trusts the session's
        /// additional certificate, and without it the download fails as untrusted.
        @Test func tlsSettingsTravelToTheDaemon() async throws {
            let fixture = try BackgroundFixture()
            try await withServer(.h2) { server in
                server.serveResource("/file", body: .pattern(length: 500_000))
                let recorder = BackgroundRecorder()
                let configuration = fixture.configuration("app.tls")
                configuration.courierAdditionalTrustedCertificates = [SharedTestTLS.authorityDER]
                let session = await fixture.session(configuration, delegate: recorder)
                let trusted = session.downloadTask(with: server.url("/file"))
                trusted.resume()
                await recorder.waitForCompletions(1)
                #expect(recorder.errors[1] == .some(nil), "\(fixture.daemonLog)")
                #expect(
                    bytesAre(recorder.finished.first?.bytes ?? Data(), MockBody.patternBytes(offset: 0, count: 500_000))
                )
                #expect(server.requests(path: "/file").first?.protocolName == "h2")
                session.invalidateAndCancel()
                await fixture.waitForNoClients()

                let plain = BackgroundRecorder()
                let untrusting = await fixture.session("app.tls", delegate: plain)
                untrusting.downloadTask(with: server.url("/file")).resume()
                await plain.waitForCompletions(1)
                #expect(
                    plain.errors.values.first??.code == .serverCertificateUntrusted
                        || plain.errors.values.first??.code == .serverCertificateHasUnknownRoot)
                untrusting.invalidateAndCancel()
            }
            await fixture.tearDown()
        }

        /// A 401 in the daemon goes to the attached app's delegate, whose credential is sent; the file is the protected
        /// body. A later task, after the app left, is answered with the credential the app gave (kept for the session).
        @Test func authenticationChallengesGoToTheApp() async throws {
            try await withBackgroundServer { fixture, server in
                server.protect("/secret", user: "ada", password: "lovelace", realm: "vault", response: .ok("the plans"))
                let recorder = BackgroundRecorder(
                    credential: URLCredential(user: "ada", password: "lovelace", persistence: .forSession))
                let session = await fixture.session("app.auth", delegate: recorder)
                session.downloadTask(with: server.url("/secret")).resume()
                await recorder.waitForCompletions(1)
                #expect(recorder.errors[1] == .some(nil), "\(fixture.daemonLog)")
                #expect(recorder.finished.first?.bytes == Data("the plans".utf8))
                #expect(recorder.challengesSeen == ["127.0.0.1 vault 0"])

                // Without an app to ask: the credential the app gave answers.
                let later = session.downloadTask(with: server.url("/secret"))
                later.earliestBeginDate = Date().addingTimeInterval(0.5)
                later.resume()
                try #require(session.backgroundClient).detach()
                await fixture.waitForNoClients()
                await fixture.waitUntilCompleted("app.auth", task: 2)
                let next = BackgroundRecorder()
                let again = await fixture.session("app.auth", delegate: next)
                await next.waitForCompletions(1)
                #expect(next.finished.first?.bytes == Data("the plans".utf8), "\(fixture.daemonLog)")
                #expect(next.challengesSeen.isEmpty)
                again.invalidateAndCancel()
            }
        }

        /// With a delegate that does not answer with a credential, the 401 is the download's result.
        @Test func anUnansweredChallengeLeavesThe401() async throws {
            try await withBackgroundServer { fixture, server in
                server.protect("/secret", user: "ada", password: "lovelace", realm: "vault", response: .ok("the plans"))
                let recorder = BackgroundRecorder()
                let session = await fixture.session("app.noauth", delegate: recorder)
                let task = session.downloadTask(with: server.url("/secret"))
                task.resume()
                await recorder.waitForCompletions(1)
                #expect(recorder.errors[1] == .some(nil), "\(fixture.daemonLog)")
                #expect((task.response as? HTTPURLResponse)?.statusCode == 401)
                #expect(recorder.challengesSeen == ["127.0.0.1 vault 0"])
                session.invalidateAndCancel()
            }
        }
    }
}
