/// The MIME type a `file:` response reports, guessed from the file name's extension as Darwin guesses it from the
/// file's type; `application/octet-stream` for anything unknown.
public enum FileMIMEType {
    /// The MIME type for a file whose name ends in `.pathExtension` (any case; empty for none).
    public static func forExtension(_ pathExtension: String) -> String {
        table[pathExtension.lowercased()] ?? "application/octet-stream"
    }

    private static let table: [String: String] = [
        "txt": "text/plain", "text": "text/plain", "log": "text/plain",
        "html": "text/html", "htm": "text/html", "css": "text/css", "csv": "text/csv", "md": "text/markdown",
        "js": "text/javascript", "mjs": "text/javascript",
        "json": "application/json", "xml": "application/xml", "pdf": "application/pdf", "zip": "application/zip",
        "gz": "application/gzip", "tar": "application/x-tar", "wasm": "application/wasm",
        "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp",
        "svg": "image/svg+xml", "ico": "image/vnd.microsoft.icon", "heic": "image/heic",
        "mp3": "audio/mpeg", "wav": "audio/wav", "mp4": "video/mp4", "mov": "video/quicktime",
        "woff": "font/woff", "woff2": "font/woff2",
    ]
}
