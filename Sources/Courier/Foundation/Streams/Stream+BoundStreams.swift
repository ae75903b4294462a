import Foundation

// Darwin's Foundation has it (with `AutoreleasingUnsafeMutablePointer`s, which a second declaration would make
// ambiguous at every call site).
#if !canImport(Darwin)
    extension Stream {
        /// Creates a bound pair of streams: what is written to the output stream is read, in order, from the input
        /// stream, through a buffer of `bufferSize` bytes.
        ///
        /// Darwin's Foundation has this method and swift-corelibs-foundation does not; it is the usual way to feed a
        /// streamed upload (``URLSession/uploadTask(withStreamedRequest:)``, answering
        /// ``URLSessionTaskDelegate/urlSession(_:task:needNewBodyStream:)`` with the input stream while the app writes the
        /// body to the output stream), so Courier provides it.
        ///
        /// The input stream's `read` waits while the buffer is empty and the output stream is open, and returns 0 once
        /// the output stream is closed and every byte was read. The output stream's `write` copies as much as the buffer
        /// has room for and returns that count, waiting only while the buffer is full; once the input stream is closed
        /// (or released), writes fail with `EPIPE`. Both may be used from any thread, or scheduled in a run loop with a
        /// delegate, which gets `.openCompleted`, `.hasBytesAvailable`/`.hasSpaceAvailable`, `.endEncountered` and
        /// `.errorOccurred` as they apply. Releasing a stream closes it.
        ///
        /// - Parameters:
        ///   - bufferSize: The most bytes written and not yet read (at least 1).
        ///   - inputStream: Set to the pair's input stream (`nil`: not wanted).
        ///   - outputStream: Set to the pair's output stream (`nil`: not wanted).
        public class func getBoundStreams(
            withBufferSize bufferSize: Int,
            inputStream: UnsafeMutablePointer<InputStream?>?,
            outputStream: UnsafeMutablePointer<OutputStream?>?
        ) {
            let buffer = BoundStreamBuffer(capacity: bufferSize)
            let input = BoundInputStream(buffer: buffer)
            let output = BoundOutputStream(buffer: buffer)
            buffer.input = input
            buffer.output = output
            inputStream?.pointee = input
            outputStream?.pointee = output
        }
    }
#endif
