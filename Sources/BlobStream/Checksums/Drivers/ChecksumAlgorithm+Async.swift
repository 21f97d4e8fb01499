import Foundation

/// Digests computed with `async`/`await`, on top of ``BlobChunks``:
///
/// ```swift
/// let digest = try await ChecksumAlgorithm.sha256.digest(of: URL(fileURLWithPath: "/data/video.mp4"))
/// ```
///
/// The source reads the next chunk on a shared thread while the task hashes the current one,
/// so reading and hashing overlap without a thread of their own. The digest covers every byte
/// from the start offset to the end, from one version of the blob: a blob changed while it was
/// read throws ``BlobStreamError/sourceChanged(resource:offset:reason:)``, never a digest.
/// Cancelling the task closes the source and throws `CancellationError`.
extension ChecksumAlgorithm {
    /// The digest of the blob at `url` (any scheme of `registry`), from `startOffset` to its end.
    /// - Throws: `CancellationError`, or the ``BlobStreamError`` that stopped the reading
    ///   (``BlobStreamError/unsupportedURL(url:reason:)`` for a URL no source can be made for).
    public func digest(
        of url: URL, startOffset: Int64 = 0, registry: BlobURLRegistry = .shared
    ) async throws -> ChecksumDigest {
        try await digest(of: try BlobChunks(url: url, startOffset: startOffset, registry: registry))
    }

    /// The digest of `dataSource`'s blob from `startOffset` to its end.
    /// - Throws: `CancellationError`, or the ``BlobStreamError`` that stopped the reading.
    public func digest(of dataSource: any BlobDataSource, startOffset: Int64 = 0) async throws -> ChecksumDigest {
        try await digest(of: BlobChunks(dataSource: dataSource, startOffset: startOffset))
    }

    /// The digest of every chunk of `chunks`.
    /// - Throws: `CancellationError`, or the ``BlobStreamError`` that ended the sequence.
    public func digest(of chunks: BlobChunks) async throws -> ChecksumDigest {
        var checksum = makeChecksum()
        for try await chunk in chunks {
            chunk.withUnsafeBytes { checksum.update($0) }
        }
        return checksum.finalize()
    }
}
