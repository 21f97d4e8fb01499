/// What a tus server said about itself in its answer to `OPTIONS`.
public struct TusServerCapabilities: Sendable, Hashable {
    /// `Tus-Version`: the protocol versions it speaks, most preferred first.
    public var versions: [String]
    /// `Tus-Extension`: the extensions it implements (`creation`, `termination`, `checksum`…).
    public var extensions: Set<String>
    /// `Tus-Max-Size`: the largest upload it accepts, if it has a limit.
    public var maxSize: Int64?
    /// `Tus-Checksum-Algorithm`: the checksum algorithms it verifies, lowercased.
    public var checksumAlgorithms: [String]

    /// Creates a description.
    public init(versions: [String], extensions: Set<String>, maxSize: Int64?, checksumAlgorithms: [String]) {
        self.versions = versions
        self.extensions = extensions
        self.maxSize = maxSize
        self.checksumAlgorithms = checksumAlgorithms
    }

    /// What the client assumes of a server that does not answer `OPTIONS`: tus 1.0.0, no
    /// extensions it can rely on, no limit.
    public static let unknown = TusServerCapabilities(
        versions: ["1.0.0"], extensions: [], maxSize: nil, checksumAlgorithms: [])

    /// Parses the headers of an `OPTIONS` answer (names lowercased).
    init(headers: [String: String]) {
        func list(_ name: String) -> [String] {
            (headers[name] ?? "").split(separator: ",")
                .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
                .filter { !$0.isEmpty }
        }
        versions = list("tus-version")
        extensions = Set(list("tus-extension"))
        maxSize = headers["tus-max-size"].flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) }
        checksumAlgorithms = list("tus-checksum-algorithm")
    }
}

/// The status of an existing upload, from `HEAD`.
public struct TusUploadStatus: Sendable, Hashable {
    /// `Upload-Offset`: the bytes the server has stored.
    public var offset: Int64
    /// `Upload-Length`: the upload's total length, or `nil` if it was deferred.
    public var length: Int64?
    /// `Upload-Metadata`, decoded (values that are not valid base64 UTF-8 are dropped).
    public var metadata: [String: String]

    /// Whether every byte has arrived.
    public var isComplete: Bool { length.map { offset >= $0 } ?? false }

    /// Creates a status.
    public init(offset: Int64, length: Int64?, metadata: [String: String] = [:]) {
        self.offset = offset
        self.length = length
        self.metadata = metadata
    }
}
