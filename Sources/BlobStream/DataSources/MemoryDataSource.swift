import Foundation
internal import SystemCalls

/// Streams bytes held in memory: the okio `Buffer` of this library, for tests, small payloads
/// and examples. Reads are immediate and never go stale.
public final class MemoryDataSource: BlobDataSource {
    /// The bytes this source serves.
    public let data: Data
    /// The name used in error messages.
    public let resourceName: String
    private let digest = LockedValue<String?>(nil)

    /// Creates a source over `data`.
    /// - Parameters:
    ///   - data: The blob.
    ///   - name: How errors name it; `"memory"` by default.
    public init(data: Data, name: String = "memory") {
        self.data = data
        self.resourceName = name
    }

    /// Completes at once with the length of ``data`` and, as its version, the SHA-256 of the
    /// bytes (computed at the first open): the same bytes are the same version in any process,
    /// so an upload of them can be continued later, and only with them.
    public func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        completion(.success(BlobSourceDescription(length: Int64(data.count), version: version)))
    }

    /// `sha256:` and the hex digest of ``data``.
    private var version: String {
        if let known = digest.withLock({ $0 }) { return known }
        let computed = "sha256:" + SHA256.digest(of: data).hex
        digest.withLock { $0 = computed }
        return computed
    }

    /// Copies bytes of ``data`` from `offset`.
    public func read(
        into buffer: UnsafeMutableRawBufferPointer,
        at offset: Int64,
        whenReadable: @escaping @Sendable () -> Void
    ) -> BlobSourceReadResult {
        guard offset < Int64(data.count) else { return .end }
        let start = data.startIndex + Int(offset)
        let count = min(buffer.count, data.endIndex - start)
        data.copyBytes(to: buffer.bindMemory(to: UInt8.self), from: start..<(start + count))
        return .read(count)
    }

    /// `true`: the bytes are already here.
    public var readsImmediately: Bool { true }

    /// Nothing to release.
    public func close() {}
}
