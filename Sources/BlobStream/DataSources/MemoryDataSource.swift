import Foundation

/// Streams bytes held in memory: the okio `Buffer` of this library, for tests, small payloads
/// and examples. Reads are immediate and never go stale.
public final class MemoryDataSource: BlobDataSource {
    /// The bytes this source serves.
    public let data: Data
    /// The name used in error messages.
    public let resourceName: String

    /// Creates a source over `data`.
    /// - Parameters:
    ///   - data: The blob.
    ///   - name: How errors name it; `"memory"` by default.
    public init(data: Data, name: String = "memory") {
        self.data = data
        self.resourceName = name
    }

    /// Completes at once with the length of ``data`` and no version: the bytes are an immutable
    /// `Data`, the same at every open, so there is no version to tell apart.
    public func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        completion(.success(BlobSourceDescription(length: Int64(data.count))))
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
