import CourierHTTP
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A resumed download's partial file and what it holds (the offset its range request asked for and the validators
/// a 206 must repeat to be appended).
struct ResumeProgress: Sendable {
    /// What the partial file holds; `nil` when the download starts over.
    var partial: PartialDownload?
    /// The partial file, when there is one to continue.
    var partialFile: URL?

    /// The download starts over from byte 0.
    static let fromZero = ResumeProgress(partial: nil, partialFile: nil)
}

/// Download tasks: the file the body streams into, resuming from resume data, and resume data when a download
/// fails. Everything here runs on the engine's executor; file I/O runs on the download file's own queue.
extension TaskEngine {
    /// Failures after which a download offers resume data: transient network failures, and a write that failed (a
    /// full disk: the bytes written before it can be continued once there is room).
    static let resumableFailures: Set<URLError.Code> = [
        .networkConnectionLost, .timedOut, .notConnectedToInternet, .cannotWriteToFile,
    ]

    func makeDownloadSink() -> DownloadSink {
        // One loop for the sink's life, so that its callbacks keep the order of the writes.
        let loop = environment.timerLoop
        return DownloadSink(
            directory: environment.configuration.courierDownloadDirectory,
            callbacksOn: { callback in loop.execute(callback) },
            onBackpressure: { [weak self] in self?.backpressureChanged() },
            onWrite: { [weak self] count, total in
                self?.later { engine in
                    engine.emit(
                        .downloadWrote(bytes: count, totalWritten: total, totalExpected: engine.expectedToReceive))
                }
            },
            onFailure: { [weak self] error in self?.fail(error) }
        )
    }

    /// Checks resume data against the partial file and adds the range fields to `request`; `nil` when the task
    /// failed instead (invalid resume data, a missing or too short partial file).
    func prepareResume(_ resumeState: DownloadResumeState, request: URLRequest) -> URLRequest? {
        let data: ResumeData
        switch resumeState {
        case .readable(let readable):
            data = readable
        case .unreadable(let error):
            fail(error)
            return nil
        }
        // The name was validated as a bare file name: it cannot leave the download directory. It must also be one
        // the library gives its download files: resume data naming another file in the folder (a daemon's lock,
        // anything an app keeps there) must not get it cut, appended to or deleted.
        let name = data.tempFileName
        guard DownloadDirectory.isDownloadFileName(name) else {
            fail(.cannotDecodeRawData("the resume data names \(name), which is not a download file"))
            return nil
        }
        // The folder is checked as a new download's is: a symbolic link or another user's folder planted at its path
        // would lead the partial file's name to a file outside the library's own.
        let folder = environment.configuration.courierDownloadDirectory
        if let problem = DownloadDirectory.privacyProblem(of: folder.path) {
            fail(.cannotOpenFile("the download folder \(folder.path) \(problem)"))
            return nil
        }
        let partial = folder.appendingPathComponent(name, isDirectory: false)
        // Another task resuming the same data would cut and write the same file: one at a time.
        guard DownloadDirectory.claim(partial) else {
            fail(.cannotOpenFile("the partial download \(data.tempFileName) is being resumed by another task"))
            return nil
        }
        claimedPartialFile = partial
        // A symbolic link or a file of another user planted under the name is refused, never followed.
        guard let size = DownloadDirectory.partialFileSize(at: partial) else {
            releaseUnopenedPartialFile()
            fail(
                .cannotOpenFile(
                    "the partial download \(data.tempFileName) no longer exists or is not a regular file of this user"
                )
            )
            return nil
        }
        do {
            try data.validate(partialFileSize: size)
        } catch {
            releaseUnopenedPartialFile()
            fail(error)
            return nil
        }
        var resumed = request
        let fields = ResumeRequestHeaders.fields(
            resumingAt: data.bytesReceived,
            entityTag: data.entityTag,
            lastModified: data.serverDownloadDate
        )
        if let fields {
            for field in fields { resumed.setValue(field.value, forHTTPHeaderField: field.name) }
            resumeProgress = ResumeProgress(partial: data.partialDownload, partialFile: partial)
        } else {
            // Nothing can be resumed safely: start over, and say so through didResumeAtOffset(0, …). unlink, not a
            // recursive removal: a folder put in the file's place since the check is not emptied.
            unlink(partial.path)
            releaseUnopenedPartialFile()
            resumeProgress = .fromZero
        }
        return resumed
    }

    /// The request without range fields, when the response to a range request says the partial file cannot be
    /// continued and the whole resource must be asked for again; `nil` otherwise.
    func resumeRetry(for response: HTTPURLResponse) -> URLRequest? {
        guard let resume = resumeProgress, let partial = resume.partial, partial.offset > 0,
            let file = resume.partialFile
        else {
            return nil
        }
        let decision = ResumeDecision.decide(resuming: partial, status: response.statusCode) {
            response.value(forHTTPHeaderField: $0)
        }
        guard case .retryWithoutRange = decision else { return nil }
        Self.discardPartialFile(file)
        claimedPartialFile = nil
        resumeProgress = .fromZero
        var plain = currentRequest
        plain.setValue(nil, forHTTPHeaderField: "Range")
        plain.setValue(nil, forHTTPHeaderField: "If-Range")
        return plain
    }

    /// Opens the download file for the final response: a fresh file, or the partial one when the server sent
    /// the rest of a resumed download.
    func openDownload(for response: HTTPURLResponse, in download: DownloadSink) {
        guard let resume = resumeProgress else {
            download.open()
            return
        }
        resumeProgress = nil
        // The partial file now belongs to the download file (append) or to its deletion (any other answer), which
        // release it.
        claimedPartialFile = nil
        guard let partial = resume.partialFile, let held = resume.partial, held.offset > 0 else {
            download.open()
            emit(.downloadResumed(offset: 0, expectedTotal: expectedToReceive))
            return
        }
        let decision = ResumeDecision.decide(resuming: held, status: response.statusCode) {
            response.value(forHTTPHeaderField: $0)
        }
        switch decision {
        case .append(let offset, let total, let finalLength):
            download.open(existing: partial, offset: offset)
            receivedBytes = offset
            expectedToReceive = total
            resumedFinalLength = finalLength
            emit(.downloadResumed(offset: offset, expectedTotal: total))
        case .restartFromZero:
            // The whole body comes again: expected as `deliverHead` set it (unknown for a body that is decoded, whose
            // Content-Length, the decision's total, counts the coded bytes).
            Self.discardPartialFile(partial)
            download.open()
            emit(.downloadResumed(offset: 0, expectedTotal: expectedToReceive))
        case .notResumable, .retryWithoutRange:
            // `.retryWithoutRange` was turned into a follow-up before the response was accepted.
            Self.discardPartialFile(partial)
            download.open()
            emit(.downloadResumed(offset: 0, expectedTotal: expectedToReceive))
        }
    }

    /// Why a resumed download whose body has ended is not complete: its range's last byte never came (a response
    /// framed by the connection's close, closed early). `nil` when the file holds the whole range, or the download
    /// was not resumed.
    func shortResumedRange() -> TransferError? {
        guard let finalLength = resumedFinalLength, receivedBytes != finalLength else { return nil }
        return .networkConnectionLost(
            "the resumed download ended at byte \(receivedBytes) of the \(finalLength) its Content-Range announced")
    }

    /// Deletes a partial file the server's answer made useless, off the executor, and gives up the task's claim.
    /// The name is unlinked: a folder put in the file's place (the download folder is the user's) is never emptied,
    /// as `FileManager`'s recursive removal would.
    static func discardPartialFile(_ url: URL) {
        DispatchQueue.global().async {
            unlink(url.path)
            DownloadDirectory.release(url)
        }
    }

    /// Gives up the claim on a partial file the task never opened (it ended before a response, or the resume data
    /// was refused); an opened one is released when its file closes.
    func releaseUnopenedPartialFile() {
        if let claimed = claimedPartialFile {
            claimedPartialFile = nil
            DownloadDirectory.release(claimed)
        }
    }

    /// Ends a failed or cancelled download: keeps the partial file and attaches resume data when the download
    /// can be resumed (asked for, or a transient failure), else deletes the file. `reported` is the error the app
    /// is given instead of `error` (a custom protocol's own failure).
    func finishDownload(
        _ download: DownloadSink, after error: URLError, reporting reported: (any Error)? = nil,
        producingResumeData: Bool
    ) {
        let wantsResumeData = producingResumeData || Self.resumableFailures.contains(error.code)
        // The file is gone before the task completes: an app (or a command) that exits on completion leaves none.
        guard wantsResumeData, let response = lastResponse as? HTTPURLResponse else {
            download.discard { [self] in
                later { engine in
                    engine.finishEmitting(TaskResult(error: error, file: nil, resumeData: nil, reportedError: reported))
                }
            }
            return
        }
        // As the app sees it: without a credential an authentication retry carried (resume data is kept on disk).
        let request = visibleRequest(currentRequest)
        let originalRequest = spec.request
        let expected = expectedToReceive
        download.keepForResume { [self] result in
            let resumeData: Data? =
                if case .success(let kept) = result {
                    Self.makeResumeData(
                        response: response,
                        file: kept.url,
                        length: kept.length,
                        request: request,
                        originalRequest: originalRequest,
                        expectedTotal: expected
                    )
                } else {
                    nil
                }
            var userInfo = error.userInfo
            if let resumeData { userInfo[NSURLSessionDownloadTaskResumeData] = resumeData }
            let final = URLError(error.code, userInfo: userInfo)
            let complete: @Sendable () -> Void = { [self] in
                later { engine in
                    engine.finishEmitting(
                        TaskResult(error: final, file: nil, resumeData: resumeData, reportedError: reported))
                }
            }
            if resumeData == nil { download.discard(then: complete) } else { complete() }
        }
    }

    private static func makeResumeData(
        response: HTTPURLResponse,
        file: URL,
        length: Int64,
        request: URLRequest,
        originalRequest: URLRequest,
        expectedTotal: Int64
    ) -> Data? {
        guard
            let validators = Resumability(
                method: request.httpMethod ?? "GET",
                rangeRequested: originalRequest.value(forHTTPHeaderField: "Range") != nil,
                status: response.statusCode,
                responseHeader: { response.value(forHTTPHeaderField: $0) },
                bytesReceived: length
            ),
            let url = request.url ?? originalRequest.url
        else { return nil }
        return try? ResumeData(
            downloadURL: url,
            bytesReceived: length,
            entityTag: validators.entityTag,
            serverDownloadDate: validators.lastModified,
            tempFileName: file.lastPathComponent,
            originalRequest: DownloadResumeState.stored(originalRequest, fallbackURL: url),
            currentRequest: DownloadResumeState.stored(request, fallbackURL: url),
            expectedTotalLength: expectedTotal
        ).encoded()
    }
}
