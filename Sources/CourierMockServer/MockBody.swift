import Foundation
import NIOCore

/// The body of a ``MockResponse`` or of a resource served with ``MockServer/serveResource(_:body:etag:lastModified:contentType:)``.
public enum MockBody: Sendable {
    /// Bytes held in memory.
    case data(Data)
    /// `length` deterministic bytes, byte i == UInt8(i % 251); generated on the fly in chunks, never held whole in memory.
    case pattern(length: Int64)

    /// The bytes of a ``pattern(length:)`` body from `offset` on, `count` of them, so a test can compare.
    ///
    /// - Parameters:
    ///   - offset: The position of the first byte in the pattern (negative values are treated as 0).
    ///   - count: How many bytes to return (negative values are treated as 0).
    /// - Returns: `count` bytes where the byte at pattern position `p` is `UInt8(p % 251)`.
    public static func patternBytes(offset: Int64, count: Int) -> Data {
        let count = max(0, count)
        var data = Data(count: count)
        data.withUnsafeMutableBytes { buffer in
            PatternTable.fill(buffer, offset: max(0, offset))
        }
        return data
    }

    /// The length of the body in bytes.
    public var length: Int64 {
        switch self {
        case .data(let data):
            return Int64(data.count)
        case .pattern(let length):
            return max(0, length)
        }
    }

    /// Writes the bytes in `offset..<offset+count` of this body into `buffer`.
    ///
    /// The caller guarantees the range lies inside `0..<length`.
    func write(offset: Int64, count: Int, into buffer: inout ByteBuffer) {
        guard count > 0 else { return }
        switch self {
        case .data(let data):
            let start = data.startIndex + Int(offset)
            buffer.writeBytes(data[start..<(start + count)])
        case .pattern:
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { pointer in
                PatternTable.fill(UnsafeMutableRawBufferPointer(rebasing: pointer[0..<count]), offset: offset)
                return count
            }
        }
    }
}

/// A precomputed run of the 251-byte pattern used to fill ``MockBody/pattern(length:)`` bytes quickly.
private enum PatternTable {
    static let period = 251
    /// Enough repetitions to copy 16 KiB with a single `memcpy` from any phase.
    static let bytes: [UInt8] = (0..<(period * 66)).map { UInt8($0 % period) }
    static let maximumRun = period * 65

    static func fill(_ buffer: UnsafeMutableRawBufferPointer, offset: Int64) {
        var phase = Int(offset % Int64(period))
        var written = 0
        bytes.withUnsafeBytes { table in
            while written < buffer.count {
                let run = min(maximumRun, buffer.count - written)
                let source = UnsafeRawBufferPointer(rebasing: table[phase..<(phase + run)])
                UnsafeMutableRawBufferPointer(rebasing: buffer[written..<(written + run)]).copyMemory(from: source)
                written += run
                phase = (phase + run) % period
            }
        }
    }
}
