/// One buffer for a request body in the chunked transfer coding, with room before and after
/// the payload for the chunk's framing: a chunk is read into ``payload`` and leaves as one
/// contiguous ``frame(_:)`` — one `send` per chunk, no copy and no vector of pieces.
package final class HTTPChunkBuffer {
    /// The size line of a chunk ("fffffff\r\n") fits in this many bytes before the payload.
    private static let headroom = 16
    /// The CRLF after a chunk's payload.
    private static let tailroom = 2
    /// The last chunk and the empty trailer that end a chunked body.
    package static let lastChunk: [UInt8] = Array("0\r\n\r\n".utf8)

    private let storage: UnsafeMutableRawBufferPointer

    /// Room for chunks of at most `capacity` payload bytes (at least 1).
    package init(capacity: Int) {
        storage = .allocate(byteCount: Self.headroom + max(1, capacity) + Self.tailroom, alignment: 16)
    }

    deinit {
        storage.deallocate()
    }

    /// Where a chunk's payload is read to.
    package var payload: UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(rebasing: storage[Self.headroom..<(storage.count - Self.tailroom)])
    }

    /// The chunk of the first `count` bytes of ``payload`` (more than 0), framed in place: its
    /// size in hexadecimal and CRLF, the payload, CRLF.
    package func frame(_ count: Int) -> UnsafeRawBufferPointer {
        precondition(count > 0 && count <= payload.count, "a chunk of \(count) bytes does not fit")
        let sizeLine = Array((String(count, radix: 16) + "\r\n").utf8)
        let start = Self.headroom - sizeLine.count
        let end = Self.headroom + count
        sizeLine.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: storage[start..<Self.headroom]).copyMemory(from: $0) }
        storage[end] = 13
        storage[end + 1] = 10
        return UnsafeRawBufferPointer(rebasing: storage[start..<(end + 2)])
    }
}
