import Foundation

/// The body of an upload task, given apart from its request (whose own body is ignored, as on Darwin).
enum UploadBody: Sendable {
    /// `uploadTask(with:from:)`.
    case data(Data)
    /// `uploadTask(with:fromFile:)`: streamed from disk, never read whole.
    case file(URL)
    /// `uploadTask(withStreamedRequest:)`: the delegate gives the stream in `needNewBodyStream`.
    case streamed
}
