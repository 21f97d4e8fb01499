/// How far an upload is: bytes done and, when known, bytes in all.
public struct UploadProgress: Sendable, Hashable {
    /// Bytes done. For a tus upload: bytes the server has confirmed (its `Upload-Offset`).
    /// For a streamed request: body bytes handed to the connection.
    public var completedBytes: Int64
    /// The length of the whole body, or `nil` when it is not known.
    public var totalBytes: Int64?

    /// Creates a progress value.
    public init(completedBytes: Int64, totalBytes: Int64?) {
        self.completedBytes = completedBytes
        self.totalBytes = totalBytes
    }

    /// `completedBytes / totalBytes` between 0 and 1, or `nil` when the total is unknown.
    /// An empty body counts as complete.
    public var fractionCompleted: Double? {
        guard let totalBytes else { return nil }
        guard totalBytes > 0 else { return 1 }
        return min(1, Double(completedBytes) / Double(totalBytes))
    }
}
