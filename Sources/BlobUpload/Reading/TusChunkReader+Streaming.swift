import BlobStream
import Foundation
internal import HTTP1

/// Chunks sent as they are read: a file's chunk is not read whole into a buffer and sent from
/// there, but read on the request's own thread, half a MiB at a time, each piece sent while it
/// is still in cache, the next one read while the socket is full (``HTTP1ProducedBody``). That
/// spares a copy through memory the size of a chunk, and a second thread (README, "Streamed tus
/// chunks"). The last chunk of the source is still read whole: its end is confirmed before a
/// byte of it goes out.
extension TusChunkReader {
    /// The most bytes read and sent at once.
    static let streamedPiece = 512 * 1024

    /// Leaves the stream yielding the byte at `offset` next, for a chunk that ``streamedBody(at:count:)``
    /// sends, and returns its byte count: up to `chunkSize`. `nil` when that chunk would be the
    /// source's last (``prepareChunk(at:)`` reads it whole), or the length is not known.
    func positionForStreaming(at offset: Int64) async throws(BlobUploadError) -> Int? {
        try await onQueue { reader throws(BlobUploadError) -> Int? in
            guard let total = reader.total, !reader.source.isLive else { return nil }
            let end = reader.chunkEnd(from: offset, limit: total)
            guard end < total else { return nil }
            if let failure = reader.prefetchFailure { throw failure }
            reader.streamFailure = nil
            try reader.reposition(to: offset)
            return Int(end - offset)
        }
    }

    /// The body of the `count` bytes at `offset`, read as it is sent. Every attempt (a resend
    /// after a stale connection, a renewed authorization) starts again at `offset`. A read
    /// that fails stops the body short; ``takeStreamFailure()`` tells why.
    func streamedBody(at offset: Int64, count: Int) -> RequestBody {
        .produced(count: count) { [self] in
            let pieces = queue.sync { () -> UnsafeMutableRawBufferPointer in
                if streamFailure == nil {
                    do throws(BlobUploadError) {
                        try reposition(to: offset)
                    } catch {
                        streamFailure = error
                    }
                }
                // The buffer a prepared chunk is read ahead into: idle while chunks stream (no
                // read ahead is queued while a request is under way, and one queued before
                // has run by now).
                return UnsafeMutableRawBufferPointer(rebasing: spare.buffer.prefix(2 * Self.streamedPiece))
            }
            return HTTP1ProducedBody(length: count, buffer: pieces) { [self] piece in produce(into: piece) }
        }
    }

    /// Why the last streamed body stopped short, if it did; cleared.
    func takeStreamFailure() -> BlobUploadError? {
        queue.sync {
            defer { streamFailure = nil }
            return streamFailure
        }
    }

    /// Fills `piece` from the stream, on the calling thread (the reader's queue is idle while a
    /// chunk streams); 0 after a failure, which ``streamFailure`` keeps.
    private func produce(into piece: UnsafeMutableRawBufferPointer) -> Int {
        queue.sync {
            guard streamFailure == nil else { return 0 }
            do throws(BlobUploadError) {
                let count = try read(into: piece, expectedLength: total, filling: true)
                // An empty current chunk where the stream is: the next prepare continues there.
                current.start = streamOffset
                current.count = 0
                return count
            } catch {
                streamFailure = error
                return 0
            }
        }
    }
}
