/// How far a checksum calculation has come.
public struct ChecksumProgress: Sendable, Hashable {
    /// Bytes hashed so far.
    public var bytesDone: Int64
    /// Bytes the calculation will hash in all, when the stream knows its length (a
    /// ``BlobInputStream`` whose source reported one, minus the start offset); `nil` otherwise.
    public var totalBytes: Int64?

    /// Creates a progress report.
    public init(bytesDone: Int64, totalBytes: Int64?) {
        self.bytesDone = bytesDone
        self.totalBytes = totalBytes
    }

    /// `bytesDone / totalBytes` in 0...1, or `nil` when the total is unknown. An empty blob is
    /// complete (1).
    public var fractionCompleted: Double? {
        guard let totalBytes else { return nil }
        guard totalBytes > 0 else { return 1 }
        return min(1, Double(bytesDone) / Double(totalBytes))
    }
}
