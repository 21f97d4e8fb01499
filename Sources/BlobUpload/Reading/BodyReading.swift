import BlobStream
import Foundation

/// The one way an upload reads its source's stream into request bodies, for tus chunks
/// (``TusChunkReader``) and S3 parts (``S3PartReader``) alike: reads that fill a buffer, hashing
/// as they go; the one end check; the one rule that carries live data past a full buffer.
/// Each reader keeps only its own bookkeeping (which chunk, which part, which buffer).
enum BodyReading {
    /// One read of `stream`, whose next byte is at `offset`, into `room`: the count (more than
    /// zero), or 0 at the end of live data (`endIsData`: a length learned at its end).
    /// - Throws: ``BlobUploadError/cancelled`` when `isCancelled` says so before or after the
    ///   read; the stream's error, named with the source and offset; for other sources,
    ///   ``BlobStreamError/unexpectedEnd(resource:offset:expectedLength:)`` before `expectedLength`.
    static func read(
        _ stream: InputStream, into room: UnsafeMutableRawBufferPointer, at offset: Int64, source: UploadSource,
        expectedLength: Int64?, endIsData: Bool, isCancelled: () -> Bool
    ) throws(BlobUploadError) -> Int {
        guard let base = room.baseAddress, !room.isEmpty else { return 0 }
        if isCancelled() { throw .cancelled }
        let count = stream.read(base.assumingMemoryBound(to: UInt8.self), maxLength: room.count)
        if count > 0 { return count }
        if isCancelled() { throw .cancelled }
        if count == 0, endIsData { return 0 }
        throw source.explaining(count == 0
            ? .source(.unexpectedEnd(resource: source.name, offset: offset, expectedLength: expectedLength ?? offset))
            : stream.uploadFailure(resource: source.name, at: offset))
    }

    /// Fills `target` from `stream` (next byte at `offset`), in reads of at most `readSize`
    /// bytes, passing each read's bytes to `hash` while they are still in the CPU's cache.
    /// Returns the bytes filled: all of `target`, fewer only at the end of live data.
    static func fill(
        _ target: UnsafeMutableRawBufferPointer, from stream: InputStream, at offset: Int64, source: UploadSource,
        expectedLength: Int64?, endIsData: Bool, readSize: Int = .max, isCancelled: () -> Bool,
        hash: (UnsafeRawBufferPointer) -> Void = { _ in }
    ) throws(BlobUploadError) -> Int {
        var filled = 0
        while filled < target.count {
            let room = UnsafeMutableRawBufferPointer(rebasing: target[filled..<min(target.count, filled + readSize)])
            let count = try read(
                stream, into: room, at: offset + Int64(filled), source: source, expectedLength: expectedLength,
                endIsData: endIsData, isCancelled: isCancelled)
            if count == 0 { break }
            hash(UnsafeRawBufferPointer(rebasing: room[0..<count]))
            filled += count
        }
        return filled
    }

    /// The one end check: a stream that has yielded all `length` bytes its source declared must
    /// report its end. A source longer than its length would otherwise be uploaded truncated
    /// and reported complete; a ``BlobInputStream`` ends only after its source confirmed the
    /// version it read (``BlobDataSource/confirmUnchanged(at:)``), or fails that it changed.
    static func requireEnd(of stream: InputStream, at length: Int64, source: UploadSource) throws(BlobUploadError) {
        var byte: UInt8 = 0
        let count = stream.read(&byte, maxLength: 1)
        if count == 0 { return }
        throw count < 0
            ? source.explaining(stream.uploadFailure(resource: source.name, at: length))
            : .source(.sourceChanged(
                resource: source.name, offset: length, reason: "the stream yields more than the declared length of \(length) bytes"))
    }

    /// The one live-data carry rule: live data's length is learned at its end, so a full buffer
    /// is known to be the last only once at least one more byte (or the end) was read. Reads
    /// into `carry` (a byte at least): the count, 0 when the data ended with the full buffer.
    static func readPast(
        _ stream: InputStream, into carry: UnsafeMutableRawBufferPointer, at offset: Int64, source: UploadSource,
        isCancelled: () -> Bool
    ) throws(BlobUploadError) -> Int {
        try read(stream, into: carry, at: offset, source: source, expectedLength: nil, endIsData: true, isCancelled: isCancelled)
    }
}
