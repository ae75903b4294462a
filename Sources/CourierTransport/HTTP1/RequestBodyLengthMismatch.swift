import CourierHTTP

/// The failures of a streamed request body (a file, a stream) that holds other than the bytes its `Content-Length`
/// announced, in one wording for the chunked reads and the `sendfile(2)` path.
enum RequestBodyLengthMismatch {
    /// The body ended after `sent` of the `length` bytes announced.
    static func endedEarly(after sent: Int64, of length: Int64) -> TransferError {
        .requestBodyStreamExhausted(
            "the request body stream ended after \(sent) of the \(length) bytes its Content-Length declares")
    }

    /// The body holds more than the `length` bytes announced.
    static func tooLong(_ length: Int64) -> TransferError {
        .requestBodyStreamExhausted(
            "the request body stream is longer than the \(length) bytes its Content-Length declares")
    }
}
