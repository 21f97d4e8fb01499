import BlobStream
import Foundation

/// One part of an upload's plan.
struct S3PartPlan: Sendable, Equatable {
    var number: Int
    var offset: Int64
    var size: Int
}

/// What was computed while a part was read, in the same pass over its bytes.
struct S3PartDigests: Sendable {
    /// The part's checksum, of the upload's algorithm.
    var checksum: ChecksumDigest
    /// Its MD5, computed only to check a part the server already has against its ETag, or
    /// for `Content-MD5` (``S3UploadOptions/sendsContentMD5``).
    var md5: ChecksumDigest?
}

/// Reads the parts of an ``UploadSource`` into the workers' buffers, computing each part's
/// checksum while its bytes are read (never in a second pass).
///
/// A source that opens at any offset (a file, an asset, an HTTP blob: anything
/// ``UploadSource/dataSource(name:length:_:)`` makes) and names its version gives every part
/// its own stream, opened at the part's offset, so parts are read in parallel. A source of
/// plain streams, or one that names no version, is read once, in order, by one stream: each
/// part waits for the part before it to be read. Every stream is pinned to the version the first one saw (``VersionPin``), and the last part is
/// complete only once its stream reported the end (after a ``BlobInputStream`` confirmed its
/// source unchanged).
final class S3PartReader: @unchecked Sendable {
    let source: UploadSource
    /// The source's length, or `nil` for a stream that only its end tells (a pipe): it is
    /// read in order, part after part, until it ends (``readNext(partSize:into:algorithm:withMD5:cancellation:)``).
    let length: Int64?
    /// Whether each part opens its own stream at its offset.
    let positional: Bool
    private let pin = VersionPin()
    /// Bytes per stream read: a checksum then runs over bytes still in the CPU's cache.
    private static let readSize = 1 << 20

    // The one stream of a sequential source, and the offset of its next byte; guarded by `turn`.
    private let turn = NSCondition()
    private var stream: InputStream?
    private var streamOffset: Int64 = 0
    // Of a stream of unknown length, guarded by `turn` too: the next part's number, the byte
    // read to learn that the part before was not the last, and whether the end was reached.
    private var nextNumber = 1
    private var carried: UInt8?
    private var ended = false
    // Why the one stream was given up, guarded by `turn`: every part waiting for its turn
    // fails with this first error, never with an interruption of its own that would hide it.
    private var streamFailure: S3Error?

    /// Learns the source's length (declared, or from its first stream) and whether it can be
    /// read at any offset.
    /// - Throws: ``S3Error/transfer(_:)`` with the source's error.
    init(source: UploadSource, cancellation: S3Cancellation) throws(S3Error) {
        self.source = source
        let first: UploadSource.Positioned
        do {
            first = try source.stream(at: 0, pinnedTo: pin)
        } catch {
            throw .transfer(error)
        }
        // Opening may wait on a peer (an HTTP source): cancelling closes it like any read.
        cancellation.watch(first.stream)
        first.stream.open()
        cancellation.unwatch(first.stream)
        if cancellation.isCancelled {
            first.stream.close()
            throw .cancelled(uploadID: nil)
        }
        if first.stream.streamStatus == .error {
            defer { first.stream.close() }
            throw .transfer(source.explaining(first.stream.uploadFailure(resource: source.name, at: 0)))
        }
        let opened = (first.stream as? any MeasuredStream)?.length
        if let declared = source.length, let opened, declared != opened {
            first.stream.close()
            throw .transfer(.lengthMismatch(url: source.name, serverLength: declared, sourceLength: opened))
        }
        let length = source.length ?? opened
        self.length = length
        var positional = false
        // A stream of unknown length is read once, in order; no other is ever made (a second
        // data source over standard input would read, or close, the same descriptor). So is a
        // source that names no version (an HTTP server without ETag or Last-Modified): streams
        // opened apart could not be told to be of one version, and the parts would mix two.
        if let length, length > 1, pin.pinned != nil, let probe = try? source.stream(at: 1, pinnedTo: pin) {
            positional = probe.startOffset == 1
            probe.stream.close()
        }
        self.positional = positional
        if positional {
            first.stream.close()
        } else {
            stream = first.stream
        }
    }

    deinit {
        stream?.close()
    }

    /// The version of the source, pinned by the first stream (``VersionPin``), if it has one.
    var version: String? { pin.pinned }

    /// Why an upload recorded as started from `version` cannot be continued with this source.
    func refusal(ofRecorded version: String) -> String? { pin.refusal(ofRecorded: version) }

    /// Reads `part` into `buffer` (at least `part.size` bytes), computing its checksum of
    /// `algorithm` and, when `withMD5`, its MD5.
    func read(
        _ part: S3PartPlan, into buffer: UnsafeMutableRawBufferPointer, algorithm: S3ChecksumAlgorithm, withMD5: Bool,
        cancellation: S3Cancellation
    ) throws(S3Error) -> S3PartDigests {
        var checksum = algorithm.algorithm.makeChecksum()
        var md5: MD5? = withMD5 ? MD5() : nil
        let target = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<part.size])
        if positional {
            let opened: UploadSource.Positioned
            do {
                opened = try source.stream(at: part.offset, pinnedTo: pin)
            } catch {
                throw .transfer(error)
            }
            let stream = opened.stream
            cancellation.watch(stream)
            defer {
                cancellation.unwatch(stream)
                stream.close()
            }
            stream.open()
            if stream.streamStatus == .error {
                throw .transfer(source.explaining(stream.uploadFailure(resource: source.name, at: part.offset)))
            }
            try fill(target, from: stream, at: part.offset, checksum: &checksum, md5: &md5, cancellation: cancellation)
        } else {
            turn.lock()
            defer {
                turn.broadcast()
                turn.unlock()
            }
            while streamOffset != part.offset {
                if let streamFailure { throw streamFailure }
                if cancellation.isCancelled { throw .cancelled(uploadID: nil) }
                _ = turn.wait(until: Date(timeIntervalSinceNow: 0.1))
            }
            if let streamFailure { throw streamFailure }
            guard let stream else { throw .cancelled(uploadID: nil) }
            cancellation.watch(stream)
            defer { cancellation.unwatch(stream) }
            do {
                try fill(target, from: stream, at: part.offset, checksum: &checksum, md5: &md5, cancellation: cancellation)
            } catch {
                giveUpStream(after: error)
                throw error
            }
            streamOffset = part.offset + Int64(part.size)
        }
        return S3PartDigests(checksum: checksum.finalize(), md5: md5?.finalize())
    }

    /// Reads the next part of a stream of unknown length into `buffer`: up to `partSize` bytes,
    /// fewer only at the end. A full part is followed by a read of one byte, which tells
    /// whether it was the last (that byte then starts the next part). Returns `nil` once the
    /// stream has ended (after one empty part, for an empty stream).
    func readNext(
        partSize: Int, into buffer: UnsafeMutableRawBufferPointer, algorithm: S3ChecksumAlgorithm,
        withMD5: (Int) -> Bool, cancellation: S3Cancellation
    ) throws(S3Error) -> (part: S3PartPlan, digests: S3PartDigests)? {
        turn.lock()
        defer { turn.unlock() }
        if let streamFailure { throw streamFailure }
        guard !ended else { return nil }
        guard let stream, let base = buffer.baseAddress else { throw .cancelled(uploadID: nil) }
        let number = nextNumber
        guard number <= S3UploadOptions.maximumPartCount else {
            throw .sourceTooLarge(source: source.name, length: streamOffset + (carried == nil ? 0 : 1))
        }
        var checksum = algorithm.algorithm.makeChecksum()
        var md5: MD5? = withMD5(number) ? MD5() : nil
        var filled = 0
        if let byte = carried {
            base.storeBytes(of: byte, as: UInt8.self)
            let first = UnsafeRawBufferPointer(start: base, count: 1)
            checksum.update(first)
            md5?.update(first)
            filled = 1
            carried = nil
        }
        cancellation.watch(stream)
        defer { cancellation.unwatch(stream) }
        do throws(S3Error) {
            let rest = UnsafeMutableRawBufferPointer(start: base + filled, count: partSize - filled)
            let count = try Self.reading { () throws(BlobUploadError) in
                try BodyReading.fill(
                    rest, from: stream, at: streamOffset + Int64(filled), source: source, expectedLength: nil, endIsData: true,
                    readSize: Self.readSize, isCancelled: { cancellation.isCancelled }
                ) { bytes in
                    checksum.update(bytes)
                    md5?.update(bytes)
                }
            }
            filled += count
            if filled < partSize {
                ended = true
            } else {
                var byte: UInt8 = 0
                let past = try Self.reading { () throws(BlobUploadError) in
                    try withUnsafeMutableBytes(of: &byte) { carry throws(BlobUploadError) in
                        try BodyReading.readPast(
                            stream, into: carry, at: streamOffset + Int64(filled), source: source, isCancelled: { cancellation.isCancelled })
                    }
                }
                if past == 0 { ended = true } else { carried = byte }
            }
        } catch {
            giveUpStream(after: error)
            ended = true
            throw error
        }
        if filled == 0, number > 1 { return nil }
        nextNumber += 1
        let part = S3PartPlan(number: number, offset: streamOffset, size: filled)
        streamOffset += Int64(filled)
        return (part, S3PartDigests(checksum: checksum.finalize(), md5: md5?.finalize()))
    }

    /// Closes the one stream after `error` (it cannot go on after a failed read, so no later
    /// part can be read) and keeps the first real error for the parts still waiting; under `turn`.
    private func giveUpStream(after error: S3Error) {
        stream?.close()
        stream = nil
        if streamFailure == nil, !S3PartUploader.isInterruption(error) { streamFailure = error }
    }

    /// Fills `target` from `stream`, whose next byte is at `offset`, hashing as it reads; at
    /// the source's end, makes sure the stream has no more bytes (``BodyReading``).
    private func fill(
        _ target: UnsafeMutableRawBufferPointer, from stream: InputStream, at offset: Int64,
        checksum: inout any Checksum, md5: inout MD5?, cancellation: S3Cancellation
    ) throws(S3Error) {
        let (source, length) = (self.source, self.length)
        try Self.reading { () throws(BlobUploadError) in
            _ = try BodyReading.fill(
                target, from: stream, at: offset, source: source, expectedLength: length ?? offset + Int64(target.count),
                endIsData: false, readSize: Self.readSize, isCancelled: { cancellation.isCancelled }
            ) { bytes in
                checksum.update(bytes)
                md5?.update(bytes)
            }
            if let length, offset + Int64(target.count) == length {
                try BodyReading.requireEnd(of: stream, at: length, source: source)
            }
        }
    }

    /// The S3 error for a failed read: ``S3Error/cancelled(uploadID:)``, or the source's.
    private static func reading<T>(_ body: () throws(BlobUploadError) -> T) throws(S3Error) -> T {
        do {
            return try body()
        } catch .cancelled {
            throw .cancelled(uploadID: nil)
        } catch {
            throw .transfer(error)
        }
    }
}
