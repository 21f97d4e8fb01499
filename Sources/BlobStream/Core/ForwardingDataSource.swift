/// A data source that decorates another, in the manner of okio's `ForwardingSource`: every
/// call it does not implement itself goes to ``base`` unchanged, so a decorator (a version
/// check, a read counter, a description recorder) writes only the calls it adds to.
///
/// The forwarding defaults pass on the base's answers as they are, including its
/// ``BlobDataSource/open(at:completion:)``, ``BlobDataSource/confirmUnchanged(at:)`` and
/// ``BlobDataSource/reasonWaitingWouldDeadlock()``, which the plain defaults of
/// ``BlobDataSource`` would otherwise silently drop.
public protocol ForwardingDataSource: BlobDataSource {
    /// The source every call not implemented by the decorator goes to.
    var base: any BlobDataSource { get }
}

extension ForwardingDataSource {
    /// The base's name.
    public var resourceName: String { base.resourceName }

    /// The base's block size.
    public var preferredBlockSize: Int { base.preferredBlockSize }

    /// The base's answer.
    public var readsImmediately: Bool { base.readsImmediately }

    /// Opens the base.
    public func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        base.open(completion: completion)
    }

    /// Opens the base for a first read at `offset`.
    public func open(
        at offset: Int64, completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void
    ) {
        base.open(at: offset, completion: completion)
    }

    /// Reads from the base.
    public func read(
        into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, whenReadable: @escaping @Sendable () -> Void
    ) -> BlobSourceReadResult {
        base.read(into: buffer, at: offset, whenReadable: whenReadable)
    }

    /// Closes the base.
    public func close() { base.close() }

    /// The base's answer.
    public func reasonWaitingWouldDeadlock() -> String? { base.reasonWaitingWouldDeadlock() }

    /// The base's answer.
    public func confirmUnchanged(at offset: Int64) -> BlobStreamError? { base.confirmUnchanged(at: offset) }
}
