import Foundation

#if canImport(Courier)
    import Courier
#elseif canImport(FoundationNetworking)
    import FoundationNetworking
#endif

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A `multipart/form-data` body being built (AFMultipartFormData): form fields, file data, files and streams, each a
/// part with its own headers. Files and streams are read only when the body is written, in 64 KiB pieces: a body
/// larger than the request serializer's memory threshold goes through a temporary file and never sits whole in
/// memory.
public final class MultipartFormData: @unchecked Sendable {
    private enum Source {
        case data(Data)
        case file(URL)
        case stream(InputStream)
    }

    private struct Part {
        var headers: [(String, String)]
        var source: Source
        var length: Int64
    }

    /// The boundary between parts (`Boundary+` and 16 random hexadecimal digits, as in AFNetworking).
    public let boundary: String
    private var parts: [Part] = []

    /// An empty body with a random boundary.
    public init() {
        boundary = String(
            format: "Boundary+%08X%08X", UInt32.random(in: .min ... .max), UInt32.random(in: .min ... .max))
    }

    /// A form field (`appendPartWithFormData:name:`).
    public func append(_ data: Data, name: String) {
        appendPart(
            headers: [("Content-Disposition", "form-data; name=\"\(Self.escaped(name))\"")], .data(data), data.count)
    }

    /// File contents from memory (`appendPartWithFileData:name:fileName:mimeType:`).
    public func append(_ data: Data, name: String, fileName: String, mimeType: String) {
        appendPart(headers: Self.fileHeaders(name, fileName, mimeType), .data(data), data.count)
    }

    /// The file at `fileURL`, named after it, with a MIME type from its extension (`appendPartWithFileURL:name:error:`).
    public func append(fileURL: URL, name: String) throws {
        try append(
            fileURL: fileURL, name: name, fileName: fileURL.lastPathComponent,
            mimeType: Self.mimeType(forExtension: fileURL.pathExtension))
    }

    /// The file at `fileURL` (`appendPartWithFileURL:name:fileName:mimeType:error:`); it must be a readable regular
    /// file, or a symbolic link to one, and it is read only when the body is written.
    public func append(fileURL: URL, name: String, fileName: String, mimeType: String) throws {
        // `attributesOfItem` describes a symbolic link itself (lstat); the body is read through the link, so the
        // type and size are those of the file it leads to.
        let attributes = try FileManager.default.attributesOfItem(atPath: fileURL.resolvingSymlinksInPath().path)
        guard attributes[.type] as? FileAttributeType == .typeRegular, let size = attributes[.size] as? NSNumber else {
            throw CocoaError(.fileReadUnknown, userInfo: [NSFilePathErrorKey: fileURL.path])
        }
        appendPart(headers: Self.fileHeaders(name, fileName, mimeType), .file(fileURL), size.int64Value)
    }

    /// `length` bytes of `stream` (`appendPartWithInputStream:name:fileName:length:mimeType:`); a stream that gives
    /// another length fails the encoding.
    public func append(_ stream: InputStream, name: String, fileName: String, length: Int64, mimeType: String) {
        appendPart(headers: Self.fileHeaders(name, fileName, mimeType), .stream(stream), length)
    }

    /// A part with the given headers (`appendPartWithHeaders:body:`).
    public func append(headers: [String: String], body: Data) {
        appendPart(headers: headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }, .data(body), body.count)
    }

    private func appendPart<Length: BinaryInteger>(headers: [(String, String)], _ source: Source, _ length: Length) {
        parts.append(Part(headers: headers, source: source, length: Int64(length)))
    }

    /// The body's exact length (its `Content-Length`).
    public var contentLength: Int64 {
        guard !parts.isEmpty else { return 0 }
        var total = Int64(0)
        for (index, part) in parts.enumerated() {
            total += Int64(delimiter(first: index == 0).utf8.count) + Int64(head(of: part).utf8.count) + part.length
        }
        return total + Int64(closing.utf8.count)
    }

    /// Writes the body to `sink` piece by piece.
    public func write(to sink: (Data) throws -> Void) throws {
        guard !parts.isEmpty else { return }
        for (index, part) in parts.enumerated() {
            try sink(Data((delimiter(first: index == 0) + head(of: part)).utf8))
            switch part.source {
            case .data(let data):
                try sink(data)
            case .file(let url):
                let handle = try FileHandle(forReadingFrom: url)
                defer { try? handle.close() }
                try copy(part.length, from: { try handle.read(upToCount: $0) }, to: sink)
                // A file that grew since it was appended (a log still written) would go out cut at its old length,
                // as if complete.
                if let more = try handle.read(upToCount: 1), !more.isEmpty {
                    throw CocoaError(
                        .fileReadCorruptFile,
                        userInfo: [
                            NSLocalizedDescriptionKey:
                                "the file \(url.path) grew after it was appended: it has more than its \(part.length) bytes"
                        ])
                }
            case .stream(let stream):
                stream.open()
                defer { stream.close() }
                try copy(
                    part.length,
                    from: { count in
                        var buffer = [UInt8](repeating: 0, count: count)
                        let read = stream.read(&buffer, maxLength: count)
                        if read < 0 {
                            // Foundation on Linux traps when `streamError` is read of a stream that has none (a
                            // closed one returns -1 with no error): ask only a failed stream.
                            let error = stream.streamStatus == .error ? stream.streamError : nil
                            throw error ?? CocoaError(.fileReadUnknown)
                        }
                        return Data(buffer.prefix(read))
                    }, to: sink)
            }
        }
        try sink(Data(closing.utf8))
    }

    /// Copies exactly `length` bytes; a source that ends early fails (a file that has more fails in `write`; a
    /// stream is not read past its length, which could wait for ever on one kept open).
    private func copy(_ length: Int64, from read: (Int) throws -> Data?, to sink: (Data) throws -> Void) throws {
        var left = length
        while left > 0 {
            guard let chunk = try read(Int(min(left, 64 * 1024))), !chunk.isEmpty else {
                throw CocoaError(
                    .fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "a part ended \(left) bytes early"])
            }
            try sink(chunk)
            left -= Int64(chunk.count)
        }
    }

    /// The whole body in memory (for small bodies).
    public func encodedData() throws -> Data {
        var body = Data()
        try write { body.append($0) }
        return body
    }

    private func delimiter(first: Bool) -> String {
        first ? "--\(boundary)\r\n" : "\r\n--\(boundary)\r\n"
    }

    private var closing: String { "\r\n--\(boundary)--\r\n" }

    private func head(of part: Part) -> String {
        // A line break in a header the app passed (a MIME type, `append(headers:body:)`) would end the header early
        // and start one of the caller's choosing: it is escaped as in the quoted names.
        part.headers.map { "\(Self.lineBreaksEscaped($0.0)): \(Self.lineBreaksEscaped($0.1))\r\n" }.joined() + "\r\n"
    }

    private static func lineBreaksEscaped(_ value: String) -> String {
        value.replacingOccurrences(of: "\r", with: "%0D").replacingOccurrences(of: "\n", with: "%0A")
    }

    private static func fileHeaders(_ name: String, _ fileName: String, _ mimeType: String) -> [(String, String)] {
        [
            ("Content-Disposition", "form-data; name=\"\(escaped(name))\"; filename=\"\(escaped(fileName))\""),
            ("Content-Type", mimeType),
        ]
    }

    /// A quoted-string's content: quotes and line breaks cannot end the header early.
    private static func escaped(_ value: String) -> String {
        lineBreaksEscaped(value.replacingOccurrences(of: "\"", with: "%22"))
    }

    /// A MIME type for common extensions, else `application/octet-stream`.
    static func mimeType(forExtension pathExtension: String) -> String {
        let types = [
            "txt": "text/plain", "html": "text/html", "json": "application/json", "png": "image/png",
            "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "pdf": "application/pdf",
            "zip": "application/zip", "xml": "application/xml", "csv": "text/csv", "mp4": "video/mp4",
        ]
        return types[pathExtension.lowercased()] ?? "application/octet-stream"
    }

    /// Writes the body into a new private temporary file, removes the file's name at once, and returns a stream
    /// over its bytes: nothing is left on disk whatever becomes of the request.
    func temporaryFileStream() throws -> InputStream {
        let folder = try Self.privateTemporaryFolder()
        let path = folder.appendingPathComponent("multipart-\(UUID().uuidString)").path
        let descriptor = open(path, O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        unlink(path)
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        do {
            try write { try handle.write(contentsOf: $0) }
            try handle.seek(toOffset: 0)
        } catch {
            try? handle.close()
            throw error
        }
        return UnlinkedFileInputStream(handle: handle)
    }

    /// `courier-multipart-<uid>` in the temporary directory, created 0700, refused unless it is a real folder of
    /// ours that nobody else can write.
    private static func privateTemporaryFolder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-multipart-\(getuid())")
        if mkdir(folder.path, 0o700) != 0 && errno != EEXIST {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        var info = stat()
        guard lstat(folder.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR, info.st_uid == getuid(),
            info.st_mode & 0o022 == 0
        else {
            throw CocoaError(
                .fileWriteNoPermission,
                userInfo: [NSLocalizedDescriptionKey: "\(folder.path) is not a private folder of this user"])
        }
        return folder
    }
}

extension HTTPRequestSerializer {
    /// A `multipart/form-data` request (`multipartFormRequestWithMethod:URLString:parameters:constructingBodyWithBlock:`):
    /// `parameters` become form fields (AFNetworking's query pairs), then `constructingBody` adds parts. A body up to
    /// `memoryThreshold` bytes is the request's `httpBody`; a larger one is written to a temporary file and streamed
    /// from it (`httpBodyStream`), never held in memory. `Content-Length` is always exact.
    public func multipartFormRequest(
        method: String, url: URL, parameters: [String: Any]? = nil, memoryThreshold: Int64 = 1 << 20,
        constructingBody: (MultipartFormData) throws -> Void
    ) throws -> URLRequest {
        var request = baseRequest(method: method, url: url)
        let form = MultipartFormData()
        if let parameters {
            // As AFNetworking: `Data` as its bytes, `NSNull` as an empty field, anything else as its text.
            for (name, value) in Self.pairs(key: nil, value: parameters) {
                if let data = value as? Data {
                    form.append(data, name: name)
                } else if value is NSNull {
                    form.append(Data(), name: name)
                } else {
                    form.append(Data(Self.text(of: value).utf8), name: name)
                }
            }
        }
        try constructingBody(form)
        request.setValue("multipart/form-data; boundary=\(form.boundary)", forHTTPHeaderField: "Content-Type")
        let length = form.contentLength
        request.setValue("\(length)", forHTTPHeaderField: "Content-Length")
        if length <= memoryThreshold {
            request.httpBody = try form.encodedData()
        } else {
            request.httpBodyStream = try form.temporaryFileStream()
        }
        return request
    }
}
