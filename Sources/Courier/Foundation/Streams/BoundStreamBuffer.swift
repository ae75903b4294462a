import Foundation

/// The bytes between the two streams of a bound pair (`Stream.getBoundStreams(withBufferSize:inputStream:outputStream:)`):
/// a ring of a fixed size, which the output stream fills and the input stream drains, each waiting on the one
/// condition when it can do nothing (a read of an empty buffer, a write to a full one).
///
/// Both streams hold the buffer; it holds neither (it tells them about each other's changes through weak
/// references), so a stream the app lets go of goes away, and the other side sees it as closed.
/// Sendable by hand: the ring and the flags are read and written under `condition` only; the weak references are set
/// once, before the streams are handed out, and only read after.
final class BoundStreamBuffer: @unchecked Sendable {
    let condition = NSCondition()
    /// The bytes written and not yet read.
    var ring: ByteRing
    /// The output stream was closed (or went away): once the ring is empty, the input is at its end.
    var writerClosed = false
    /// The input stream was closed (or went away): nothing written can be read any more.
    var readerClosed = false
    weak var input: BoundInputStream?
    weak var output: BoundOutputStream?

    init(capacity: Int) {
        ring = ByteRing(capacity: max(1, capacity))
    }

    func locked<T>(_ body: () -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        return body()
    }

    /// The input stream closed or went away: nothing written can be read any more. A waiting write wakes (and
    /// fails); the output stream tells its delegate.
    func endReading() {
        locked {
            readerClosed = true
            condition.broadcast()
        }
        output?.readerWentAway()
    }

    /// The output stream closed or went away: the reader reads what is buffered, then the end. A waiting read wakes;
    /// the input stream tells its delegate.
    func endWriting() {
        locked {
            writerClosed = true
            condition.broadcast()
        }
        input?.writerClosed()
    }
}

/// A ring of bytes of a fixed capacity, copied in and out in at most two pieces.
struct ByteRing {
    private var storage: [UInt8]
    private var start = 0
    private(set) var count = 0

    init(capacity: Int) {
        storage = [UInt8](repeating: 0, count: capacity)
    }

    var space: Int { storage.count - count }
    var isEmpty: Bool { count == 0 }

    /// Copies in as much of `source` as there is space for; returns how much.
    mutating func write(_ source: UnsafeRawBufferPointer) -> Int {
        let total = min(source.count, space)
        var copied = 0
        storage.withUnsafeMutableBytes { ring in
            while copied < total {
                let end = (start + count) % ring.count
                let piece = min(total - copied, ring.count - end, end >= start ? ring.count - end : start - end)
                ring.baseAddress!.advanced(by: end).copyMemory(
                    from: source.baseAddress!.advanced(by: copied), byteCount: piece)
                copied += piece
                count += piece
            }
        }
        return total
    }

    /// Copies out up to `destination.count` bytes; returns how many.
    mutating func read(into destination: UnsafeMutableRawBufferPointer) -> Int {
        let total = min(destination.count, count)
        var copied = 0
        storage.withUnsafeBytes { ring in
            while copied < total {
                let piece = min(total - copied, ring.count - start)
                destination.baseAddress!.advanced(by: copied).copyMemory(
                    from: ring.baseAddress!.advanced(by: start), byteCount: piece)
                copied += piece
                start = (start + piece) % ring.count
                count -= piece
            }
        }
        if count == 0 { start = 0 }
        return total
    }
}
