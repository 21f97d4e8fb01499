import BlobStream
import Foundation

/// An in-memory data source whose misbehaviour a test scripts: stale handles at chosen offsets,
/// bytes that arrive later, slow or failing opens, a blob that changes on reopen. It counts
/// every call, so tests can check how the stream drives its source.
public final class ScriptedDataSource: BlobDataSource, @unchecked Sendable {
    /// What the next `open` does.
    public enum OpenBehaviour: Sendable {
        /// Completes before `open` returns.
        case immediate
        /// Completes on another queue after `delay` seconds.
        case later(delay: TimeInterval)
        /// Fails with the error.
        case fail(BlobStreamError)
        /// Never completes.
        case never
    }

    private let lock = NSLock()
    private var bytes: [UInt8]
    private var version: String
    private var staleOffsets: Set<Int64>
    private var isOpen = false
    private var pendingWake: (@Sendable () -> Void)?
    private var readsSinceWake = 0

    /// The open behaviour; `.immediate` by default.
    public var openBehaviour: OpenBehaviour {
        get { lock.withLock { _openBehaviour } }
        set { lock.withLock { _openBehaviour = newValue } }
    }
    private var _openBehaviour: OpenBehaviour = .immediate

    /// When set, reads answer `wouldBlock` every other call and wake the stream from another
    /// queue after this many seconds: bytes that arrive asynchronously.
    public var wouldBlockDelay: TimeInterval? {
        get { lock.withLock { _wouldBlockDelay } }
        set { lock.withLock { _wouldBlockDelay = newValue } }
    }
    private var _wouldBlockDelay: TimeInterval?

    /// When true, reads answer `wouldBlock` and never wake the stream (a stalled peer).
    public var stallReads: Bool {
        get { lock.withLock { _stallReads } }
        set { lock.withLock { _stallReads = newValue } }
    }
    private var _stallReads = false

    /// When true, the source reports no length: the end is known only when a read finds it.
    public let hidesLength: Bool

    /// At most this many bytes per read (to mimic a source that returns short reads).
    public var maxBytesPerRead: Int = .max

    private var opens = 0, reads = 0, closes = 0, staleAnswers = 0
    /// `open` calls so far.
    public var openCount: Int { lock.withLock { opens } }
    /// `read` calls so far.
    public var readCount: Int { lock.withLock { reads } }
    /// `close` calls so far.
    public var closeCount: Int { lock.withLock { closes } }
    /// How many stale handles have been reported.
    public var invalidations: Int { lock.withLock { staleAnswers } }

    /// The resource name for errors.
    public let resourceName = "scripted"
    /// Block size the stream should use by default.
    public let preferredBlockSize: Int

    /// Creates a source over `bytes` that goes stale once at each of `staleOffsets`.
    public init(bytes: [UInt8], staleOffsets: Set<Int64> = [], hidesLength: Bool = false, preferredBlockSize: Int = 64 * 1024) {
        self.bytes = bytes
        self.staleOffsets = staleOffsets
        self.hidesLength = hidesLength
        self.preferredBlockSize = preferredBlockSize
        self.version = "v1"
    }

    /// Replaces the blob: the next open sees `newBytes` under a new version, and reads of the
    /// current handle go stale.
    public func replace(with newBytes: [UInt8]) {
        lock.withLock {
            bytes = newBytes
            version = "v\(Int(version.dropFirst())! + 1)"
            staleOffsets.insert(-1)
        }
    }

    /// Every offset the source has not gone stale at yet.
    public var remainingStaleOffsets: Set<Int64> { lock.withLock { staleOffsets.filter { $0 >= 0 } } }

    public func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        let (behaviour, description) = lock.withLock { () -> (OpenBehaviour, BlobSourceDescription) in
            opens += 1
            return (_openBehaviour, BlobSourceDescription(length: hidesLength ? nil : Int64(bytes.count), version: version))
        }
        let succeed: @Sendable () -> Void = { [self] in
            lock.withLock {
                isOpen = true
                staleOffsets.remove(-1)
            }
            completion(.success(description))
        }
        switch behaviour {
        case .immediate: succeed()
        case .later(let delay): DispatchQueue.global().asyncAfter(deadline: .now() + delay, execute: succeed)
        case .fail(let error): completion(.failure(error))
        case .never: break
        }
    }

    public func read(
        into buffer: UnsafeMutableRawBufferPointer,
        at offset: Int64,
        whenReadable: @escaping @Sendable () -> Void
    ) -> BlobSourceReadResult {
        lock.lock()
        defer { lock.unlock() }
        reads += 1
        precondition(isOpen, "the stream read a source that is not open")
        if staleOffsets.contains(-1) || staleOffsets.contains(offset) {
            staleOffsets.remove(offset)
            staleAnswers += 1
            return .invalidated
        }
        if _stallReads {
            pendingWake = whenReadable
            return .wouldBlock
        }
        if let delay = _wouldBlockDelay {
            readsSinceWake += 1
            if readsSinceWake % 2 == 1 {
                DispatchQueue.global().asyncAfter(deadline: .now() + delay, execute: whenReadable)
                return .wouldBlock
            }
        }
        guard offset < Int64(bytes.count) else { return .end }
        // Stop short of the next stale offset so that it is hit exactly.
        let nextStale = staleOffsets.filter { $0 > offset }.min() ?? Int64.max
        let limit = min(Int64(buffer.count), Int64(bytes.count) - offset, nextStale - offset, Int64(maxBytesPerRead))
        let count = Int(limit)
        bytes.withUnsafeBytes { source in
            buffer.baseAddress!.copyMemory(from: source.baseAddress! + Int(offset), byteCount: count)
        }
        return .read(count)
    }

    public func close() {
        lock.withLock {
            closes += 1
            isOpen = false
            pendingWake = nil
        }
    }
}
