import BlobStream
import Foundation

/// Chunks of live data (``UploadSource/isLive``): one stream, read once, whose length is
/// learned at its end.
///
/// A tus upload of live data must send the length with its last `PATCH`, so the reader has to
/// know a chunk is the last one before it is sent. A full chunk is therefore followed by a read
/// of at least one byte of the next chunk into the second buffer (or of the end) before it is
/// handed over; ``prefetchNext()`` then fills the rest of that buffer while the chunk is sent.
///
/// Nothing can be read again: a chunk is prepared only from bytes the buffers still hold (the
/// current chunk, the one read ahead). An offset before them fails with
/// ``BlobUploadError/notReplayable(source:offset:available:)``, never with other bytes.
extension TusChunkReader {
    /// Opens the live source's one stream, at its first byte, and allocates buffers of a
    /// whole chunk (the length is unknown).
    func startLive() async throws(BlobUploadError) {
        try await onQueue { reader throws(BlobUploadError) in
            try reader.reposition(to: 0)
            try reader.allocateBuffers(for: Int64(reader.chunkSize))
        }
    }

    /// ``prepareChunk(at:)`` for live data; returns the length once the end has been read.
    func prepareLive(at offset: Int64) throws(BlobUploadError) -> Int64? {
        if let prefetchFailure { throw prefetchFailure }
        if prefetched, offset >= spare.start, offset <= spare.end {
            swap(&current, &spare)
            prefetched = false
            keep(from: offset)
        } else if offset >= current.start, offset <= current.end {
            keep(from: offset)
            // The stream is past this chunk already (the next one is read ahead): what is
            // left of it is the whole chunk.
            if prefetched { return total }
        } else {
            throw .notReplayable(source: source.name, offset: offset, available: current.start)
        }
        try fill(&current, to: chunkEnd(from: offset, limit: total))
        if total == nil {
            try readAhead()
        }
        return total
    }

    /// Reads at least one byte after the full current chunk into the second buffer, or learns
    /// that the data ends with that chunk.
    private func readAhead() throws(BlobUploadError) {
        spare.start = current.end
        spare.count = 0
        let count = try read(into: spare.buffer, expectedLength: nil)
        if count == 0 {
            total = current.end
        } else {
            spare.count = count
            prefetched = true
        }
    }

    /// ``prefetchNext()`` for live data: fills the rest of the chunk read ahead. A failure is
    /// kept for the next ``prepareChunk(at:)``: live data cannot be read again.
    func prefetchLive() {
        guard total == nil, prefetched, stream != nil, streamOffset == spare.end else { return }
        do throws(BlobUploadError) {
            try fill(&spare, to: chunkEnd(from: spare.start, limit: nil))
        } catch {
            prefetchFailure = error
        }
    }
}
