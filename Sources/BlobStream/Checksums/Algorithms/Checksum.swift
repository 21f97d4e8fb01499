import Foundation

/// A running checksum or message digest, fed incrementally: the shape of Go's `hash.Hash` and
/// of the hash inside okio's `HashingSource`.
///
/// ## Contract
/// - ``update(_:)`` appends bytes; the digest depends only on the concatenation of everything
///   passed, never on how it was split across calls.
/// - ``finalize()`` returns the digest of everything passed so far and leaves the state
///   untouched, so more bytes may follow and a later `finalize()` covers them too.
/// - ``reset()`` forgets every byte, as if the value had just been created.
/// - Conforming types are values: a copy is an independent snapshot of the running state.
///
/// Implementations: ``CRC32``, ``CRC32C``, ``CRC64NVME``, ``MD5``, ``SHA1``, ``SHA256``; make
/// one by name with ``ChecksumAlgorithm/makeChecksum()``. They use the CPU's CRC, carry-less
/// multiply and SHA instructions where it has them, and equivalent portable code elsewhere.
public protocol Checksum: Sendable {
    /// The algorithm this type computes.
    static var algorithm: ChecksumAlgorithm { get }

    /// Creates a checksum of zero bytes.
    init()

    /// Appends the bytes of `bytes` (which may be empty, at any alignment).
    mutating func update(_ bytes: UnsafeRawBufferPointer)

    /// The digest of every byte passed since creation or the last ``reset()``. Does not change
    /// the state.
    func finalize() -> ChecksumDigest

    /// Forgets every byte passed so far.
    mutating func reset()
}

extension Checksum {
    /// The algorithm this checksum computes (``algorithm`` of its type, for existentials).
    public var algorithm: ChecksumAlgorithm { Self.algorithm }

    /// Appends `bytes` (`Data`, `[UInt8]`, a slice, or any other `DataProtocol`), region by
    /// region without copying.
    public mutating func update(_ bytes: some DataProtocol) {
        for region in bytes.regions {
            region.withUnsafeBytes { update($0) }
        }
    }

    /// The digest of `bytes` alone.
    public static func digest(of bytes: some DataProtocol) -> ChecksumDigest {
        var checksum = Self()
        checksum.update(bytes)
        return checksum.finalize()
    }
}
