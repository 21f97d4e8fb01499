/// Which `Upload-Checksum` a tus upload sends with each PATCH.
public enum TusChecksumPolicy: Sendable, Hashable {
    /// The best algorithm the server lists in `Tus-Checksum-Algorithm` (sha256, then sha1,
    /// then md5); sha1 — which every server with the checksum extension must support — when
    /// it lists none of those; nothing when the server lacks the checksum extension.
    case automatic
    /// No checksums.
    case disabled
}

/// Computes the digest of one chunk for `Upload-Checksum`.
protocol ChunkHasher: Sendable {
    /// The tus name of the algorithm (`sha1`, `sha256`, `md5`).
    var name: String { get }
    /// The raw digest of `bytes`.
    func digest(_ bytes: UnsafeRawBufferPointer) -> [UInt8]
}

/// The hashers this module can use, best first, and the choice of one for a server.
enum ChunkHashers {
    /// Every hasher available, in order of preference.
    static let preferred: [any ChunkHasher] = []

    /// The hasher to use with a server that advertises `capabilities`, or `nil` for none.
    static func choose(for capabilities: TusServerCapabilities, policy: TusChecksumPolicy) -> (any ChunkHasher)? {
        guard policy == .automatic, capabilities.extensions.contains("checksum") else { return nil }
        let listed = Set(capabilities.checksumAlgorithms)
        if let best = preferred.first(where: { listed.contains($0.name) }) {
            return best
        }
        return preferred.first { $0.name == "sha1" }
    }
}
