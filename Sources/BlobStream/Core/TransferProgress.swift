/// How far a long job over a blob has come — a checksum, an upload: bytes done and, when
/// known, bytes in all.
public struct TransferProgress: Sendable, Hashable {
    /// Bytes done. For a checksum: bytes hashed. For a tus upload: bytes the server has
    /// confirmed (its `Upload-Offset`). For a streamed request: body bytes handed to the
    /// connection.
    public var completedBytes: Int64
    /// Bytes in all, when known (a ``BlobInputStream`` whose source reported its length, minus
    /// the start offset); `nil` otherwise.
    public var totalBytes: Int64?
    /// For an upload whose server confirms what it stored (tus, S3): the bytes written to the
    /// server so far, confirmed or not, at least ``completedBytes`` (bytes sent again after a
    /// failure count again from where the server's offset stood). `nil` where nothing more
    /// than ``completedBytes`` is known.
    public var sentBytes: Int64?

    /// Creates a progress report.
    public init(completedBytes: Int64, totalBytes: Int64?, sentBytes: Int64? = nil) {
        self.completedBytes = completedBytes
        self.totalBytes = totalBytes
        self.sentBytes = sentBytes
    }

    /// `completedBytes / totalBytes` in 0...1, or `nil` when the total is unknown. An empty blob
    /// is complete (1).
    public var fractionCompleted: Double? {
        guard let totalBytes else { return nil }
        guard totalBytes > 0 else { return 1 }
        return min(1, Double(completedBytes) / Double(totalBytes))
    }
}
