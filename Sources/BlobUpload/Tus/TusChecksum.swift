import BlobStream

/// Which `Upload-Checksum` a tus upload sends with each PATCH.
public enum TusChecksumPolicy: Sendable, Hashable {
    /// The best algorithm the server lists in `Tus-Checksum-Algorithm` (sha256, then sha1,
    /// then md5); sha1 — which every server with the checksum extension must support — when
    /// it lists none of those; nothing when the server lacks the checksum extension.
    case automatic
    /// No checksums.
    case disabled

    /// The algorithm to use with a server that advertises `capabilities`, or `nil` for none.
    func algorithm(for capabilities: TusServerCapabilities) -> ChecksumAlgorithm? {
        guard self == .automatic, capabilities.extensions.contains("checksum") else { return nil }
        let listed = Set(capabilities.checksumAlgorithms)
        let preferred: [ChecksumAlgorithm] = [.sha256, .sha1, .md5]
        return preferred.first { listed.contains($0.name) } ?? .sha1
    }
}
