import CourierHTTP
import Foundation
import NIOConcurrencyHelpers

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

extension TaskRunner {
    /// Transient failures after which a download offers resume data.
    static let resumableFailures: Set<URLError.Code> = [.networkConnectionLost, .timedOut, .notConnectedToInternet]

    /// Checks resume data against the partial file and adds the range fields to `request`; `nil` when the task
    /// failed instead (invalid resume data, a missing or too short partial file).
    func prepareResume(_ resume: DownloadResumeState, request: URLRequest) -> URLRequest? {
        guard let data = resume.resumeData else {
            fail(resume.error ?? TransferError.cannotDecodeRawData("the resume data cannot be used"))
            return nil
        }
        // The name was validated as a bare file name: it cannot leave the download directory.
        let partial = session.sessionConfiguration.courierDownloadDirectory
            .appendingPathComponent(data.tempFileName, isDirectory: false)
        // Another task resuming the same data would cut and write the same file: one at a time.
        guard DownloadDirectory.claim(partial) else {
            fail(
                TransferError.cannotOpenFile(
                    "the partial download \(data.tempFileName) is being resumed by another task"
                )
            )
            return nil
        }
        lock.withLock { state.claimedPartialFile = partial }
        // A symbolic link or a file of another user planted under the name is refused, never followed.
        guard let size = DownloadDirectory.partialFileSize(at: partial) else {
            releaseUnopenedPartialFile()
            fail(
                TransferError.cannotOpenFile(
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
            lock.withLock { state.resume = ResumeProgress(partial: data.partialDownload, partialFile: partial) }
        } else {
            // Nothing can be resumed safely: start over, and say so through didResumeAtOffset(0, …).
            try? FileManager.default.removeItem(at: partial)
            releaseUnopenedPartialFile()
            lock.withLock { state.resume = .fromZero }
        }
        return resumed
    }

    /// Opens the download file for the final response: a fresh file, or the partial one when the server sent
    /// the rest of a resumed download.
    func deliverDownloadHead(_ response: HTTPURLResponse, to download: DownloadSink) {
        guard let resume = lock.withLock({ state.resume }) else {
            download.open()
            return
        }
        lock.withLock {
            state.resume = nil
            // The partial file now belongs to the download file (append) or to its deletion (any other answer),
            // which release it.
            state.claimedPartialFile = nil
        }
        guard let partial = resume.partialFile, let held = resume.partial, held.offset > 0 else {
            download.open()
            notifyResumed(at: 0, expectedTotal: response.expectedContentLength)
            return
        }
        let decision = ResumeDecision.decide(resuming: held, status: response.statusCode) {
            response.value(forHTTPHeaderField: $0)
        }
        switch decision {
        case .append(let offset, let total):
            download.open(existing: partial, offset: offset)
            task.update { state in
                state.countOfBytesReceived = offset
                state.countOfBytesExpectedToReceive = total
            }
            task.setProgress(total: total, completed: offset)
            notifyResumed(at: offset, expectedTotal: total)
        case .restartFromZero(let total):
            Self.discardPartialFile(partial)
            download.open()
            notifyResumed(at: 0, expectedTotal: total)
        case .notResumable:
            Self.discardPartialFile(partial)
            download.open()
            notifyResumed(at: 0, expectedTotal: response.expectedContentLength)
        case .retryWithoutRange:
            Self.discardPartialFile(partial)
            lock.withLock { state.resume = .fromZero }
            var plain = task.currentRequest ?? URLRequest(url: response.url ?? partial)
            plain.setValue(nil, forHTTPHeaderField: "Range")
            plain.setValue(nil, forHTTPHeaderField: "If-Range")
            follow(plain)
        }
    }

    /// Deletes a partial file the server's answer made useless, off the event loop this runs on, and gives up the
    /// task's claim on it.
    static func discardPartialFile(_ url: URL) {
        DispatchQueue.global().async {
            try? FileManager.default.removeItem(at: url)
            DownloadDirectory.release(url)
        }
    }

    /// Gives up the claim on a partial file the task never opened (it ended before a response, or the resume data
    /// was refused); an opened one is released when its file closes.
    func releaseUnopenedPartialFile() {
        let claimed: URL? = lock.withLock {
            defer { state.claimedPartialFile = nil }
            return state.claimedPartialFile
        }
        if let claimed { DownloadDirectory.release(claimed) }
    }

    private func notifyResumed(at offset: Int64, expectedTotal: Int64) {
        guard case .delegate = task.completionMode, let downloadTask = task as? URLSessionDownloadTask else { return }
        let session = self.session
        session.dispatcher.async {
            downloadTask.resolvedDelegate(URLSessionDownloadDelegate.self)?.urlSession(
                session,
                downloadTask: downloadTask,
                didResumeAtOffset: offset,
                expectedTotalBytes: expectedTotal
            )
        }
    }

    /// Ends a failed or cancelled download: keeps the partial file and attaches resume data when the download
    /// can be resumed (asked for, or a transient failure), else deletes the file.
    func finishDownload(
        _ download: DownloadSink,
        after error: URLError,
        resumeDataHandler: (@Sendable (Data?) -> Void)?
    ) {
        let wantsResumeData = resumeDataHandler != nil || Self.resumableFailures.contains(error.code)
        guard wantsResumeData, let response = task.response as? HTTPURLResponse else {
            download.discard()
            if let resumeDataHandler { session.dispatcher.async { resumeDataHandler(nil) } }
            task.complete(with: error, body: nil)
            return
        }
        download.keepForResume { [self] result in
            let resumeData: Data? =
                if case .success(let kept) = result {
                    makeResumeData(response: response, file: kept.url, length: kept.length)
                } else {
                    nil
                }
            if resumeData == nil { download.discard() }
            if let resumeDataHandler { session.dispatcher.async { resumeDataHandler(resumeData) } }
            var userInfo = error.userInfo
            if let resumeData { userInfo[NSURLSessionDownloadTaskResumeData] = resumeData }
            task.complete(with: URLError(error.code, userInfo: userInfo), body: nil)
        }
    }

    private func makeResumeData(response: HTTPURLResponse, file: URL, length: Int64) -> Data? {
        let current = task.currentRequest
        guard
            let validators = Resumability(
                method: current?.httpMethod ?? "GET",
                status: response.statusCode,
                responseHeader: { response.value(forHTTPHeaderField: $0) },
                bytesReceived: length
            ),
            let url = current?.url ?? task.originalRequest?.url
        else { return nil }
        return try? ResumeData(
            downloadURL: url,
            bytesReceived: length,
            entityTag: validators.entityTag,
            serverDownloadDate: validators.lastModified,
            tempFileName: file.lastPathComponent,
            originalRequest: DownloadResumeState.stored(task.originalRequest, fallbackURL: url),
            currentRequest: DownloadResumeState.stored(current, fallbackURL: url),
            expectedTotalLength: task.countOfBytesExpectedToReceive
        ).encoded()
    }

    /// `.becomeDownload`: a download task takes over the transfer. The body already received (held while the
    /// delegate decided) and the rest go to its file; the data task ends without further delegate calls.
    func becomeDownload(from dataTask: URLSessionDataTask) {
        let session = self.session
        let request = dataTask.currentRequest ?? dataTask.originalRequest ?? URLRequest(url: URL(fileURLWithPath: "/"))
        let downloadTask = URLSessionDownloadTask(
            session: session,
            request: request,
            identifier: session.registry.nextIdentifier(),
            completionMode: .delegate
        )
        session.registry.replace(dataTask, with: downloadTask)
        let response = dataTask.response
        let expected = dataTask.countOfBytesExpectedToReceive
        downloadTask.update { state in
            _ = state.lifecycle.resume()
            state.runner = self
            state.response = response
            state.countOfBytesExpectedToReceive = expected
        }
        downloadTask.setProgress(total: expected)
        handOver(to: downloadTask)
        let sink = makeDownloadSink(for: downloadTask)
        lock.withLock { state.download = sink }
        sink.open()
        dataTask.endSilently(removeFromSession: false)
        let dataDelegate = dataTask.resolvedDelegate(URLSessionDataDelegate.self)
        session.dispatcher.async {
            dataDelegate?.urlSession(session, dataTask: dataTask, didBecome: downloadTask)
        }
        releaseHeld()
    }
}
