import CourierHTTP

/// One compression library's streaming decoder, as ``ContentDecoder`` drives it: ``ContentDecoder`` owns the
/// queued input, the step size, the ratio guard and the end-of-body checks, so a library only turns the bytes it
/// is given into as many decoded bytes as fit.
///
/// Conforming types are classes because the libraries keep pointers into their own state, which must not move.
protocol StreamDecompressor: AnyObject {
    /// How many queued bytes ``start(firstBytes:)`` must see, 0 for none (deflate tells the zlib format from raw
    /// deflate data by the first two).
    var bytesNeededToStart: Int { get }

    /// Prepares the library's state, before the first call to ``decompress(_:into:)``.
    ///
    /// - Parameter firstBytes: The first ``bytesNeededToStart`` bytes of the body.
    /// - Throws: `cannotDecodeContentData` when the library cannot start (out of memory, for one).
    func start(firstBytes: [UInt8]) throws(TransferError)

    /// Decodes from `input` into `output`, as far as either allows.
    ///
    /// `input` may be empty: the library may still hold decoded bytes that did not fit last time.
    func decompress(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> DecompressionStep

    /// Bytes follow the end of the compressed data: prepares to decode them as another compressed stream.
    ///
    /// - Returns: `false` when the format allows nothing after its end (the bytes are then an error).
    /// - Throws: `cannotDecodeContentData` when the library cannot start again.
    func startNextStream() throws(TransferError) -> Bool
}
