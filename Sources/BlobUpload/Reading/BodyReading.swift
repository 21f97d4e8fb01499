import BlobStream
import Foundation

/// How an upload reads its source's stream into request bodies, for tus chunks
/// (``TusChunkReader``) and S3 parts (``S3PartReader``) alike: reads that fill a buffer, hashing
/// as they go; the end check; the rule that carries live data past a full buffer.
/// Each reader keeps only its own bookkeeping (which chunk, which part, which buffer).
enum BodyReading {
    /// One read of `stream`, whose next byte is at `offset`, into `room`: the count (more than
    /// zero), or 0 at the end of live data (`endIsData`: a length learned at its end).
    /// - Throws: As ``fill(_:from:at:source:expectedLength:endIsData:readSize:isCancelled:hash:)``.
    static func read(
        _ stream: InputStream, into room: UnsafeMutableRawBufferPointer, at offset: Int64, source: UploadSource,
        expectedLength: Int64?, endIsData: Bool, isCancelled: () -> Bool
    ) throws(BlobUploadError) -> Int {
        try fill(
            room, from: stream, at: offset, source: source, expectedLength: expectedLength, endIsData: endIsData,
            isCancelled: isCancelled, oneRead: true)
    }

    /// Fills `target` from `stream` (next byte at `offset`), in reads of at most `readSize`
    /// bytes, passing each read's bytes to `hash` while they are still in the CPU's cache.
    /// Returns the bytes filled: all of `target`, fewer only at the end of live data.
    /// - Throws: ``BlobUploadError/cancelled`` when `isCancelled` says so before a read, or
    ///   after one that brought no bytes; the stream's error, named with the source and offset;
    ///   for other sources than live data (`endIsData`),
    ///   ``BlobStreamError/unexpectedEnd(resource:offset:expectedLength:)`` before `expectedLength`.
    static func fill(
        _ target: UnsafeMutableRawBufferPointer, from stream: InputStream, at offset: Int64, source: UploadSource,
        expectedLength: Int64?, endIsData: Bool, readSize: Int = .max, isCancelled: () -> Bool,
        hash: (UnsafeRawBufferPointer) -> Void = { _ in }
    ) throws(BlobUploadError) -> Int {
        try fill(
            target, from: stream, at: offset, source: source, expectedLength: expectedLength, endIsData: endIsData,
            readSize: readSize, isCancelled: isCancelled, oneRead: false, hash: hash)
    }

    /// Both of the above, on `InputStream.readLoop`: with
    /// `oneRead`, it returns after the first read that brings bytes.
    private static func fill(
        _ target: UnsafeMutableRawBufferPointer, from stream: InputStream, at offset: Int64, source: UploadSource,
        expectedLength: Int64?, endIsData: Bool, readSize: Int = .max, isCancelled: () -> Bool, oneRead: Bool,
        hash: (UnsafeRawBufferPointer) -> Void = { _ in }
    ) throws(BlobUploadError) -> Int {
        guard !target.isEmpty else { return 0 }
        var filled = 0
        func room() -> UnsafeMutableRawBufferPointer {
            UnsafeMutableRawBufferPointer(rebasing: target[filled..<filled + min(readSize, target.count - filled)])
        }
        let stop = stream.readLoop(into: room(), stopped: isCancelled) { bytes in
            hash(bytes)
            filled += bytes.count
            return oneRead || filled == target.count ? nil : room()
        }
        let at = offset + Int64(filled)
        switch stop {
        case .filled: return filled
        case .stopped: throw .cancelled
        case .end where endIsData: return filled
        case .end:
            throw source.explaining(.source(.unexpectedEnd(resource: source.name, offset: at, expectedLength: expectedLength ?? at)))
        case .failed, .waiting:
            throw source.explaining(stream.uploadFailure(resource: source.name, at: at))
        }
    }

    /// The end check: a stream that has yielded all `length` bytes its source declared must
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

    /// The live-data carry rule: live data's length is learned at its end, so a full buffer
    /// is known to be the last only once at least one more byte (or the end) was read. Reads
    /// into `carry` (a byte at least): the count, 0 when the data ended with the full buffer.
    static func readPast(
        _ stream: InputStream, into carry: UnsafeMutableRawBufferPointer, at offset: Int64, source: UploadSource,
        isCancelled: () -> Bool
    ) throws(BlobUploadError) -> Int {
        try read(stream, into: carry, at: offset, source: source, expectedLength: nil, endIsData: true, isCancelled: isCancelled)
    }
}
