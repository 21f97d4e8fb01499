import BlobStream
import Foundation

/// An in-memory data source that records how the stream drives it and lets a test take over
/// any read: every call with its offset and size, calls made while it is closed, calls that
/// overlap, and `confirmUnchanged` answers chosen by the test. Unlike ``ScriptedDataSource`` it
/// never traps on misuse; it records it, so a test can fail with a message instead of a crash.
public final class ProbeDataSource: BlobDataSource, @unchecked Sendable {
    /// One call the stream made.
    public enum Call: Equatable, Sendable {
        case open
        /// A read at `offset` into a buffer of `capacity` bytes.
        case read(offset: Int64, capacity: Int)
        case confirm(offset: Int64)
        case close
    }

    /// What a read hook decides for one read.
    public enum ReadDecision: Sendable {
        /// Serve the bytes as usual.
        case serve
        /// Answer this instead (for `.wouldBlock`, the hook keeps or calls `whenReadable`).
        case answer(BlobSourceReadResult)
    }

    private let lock = NSLock()
    private var bytes: [UInt8]
    private var isOpen = false
    private var running = 0
    private var log: [Call] = []
    private var openedAt: [Int64?] = []
    private var misuse: [String] = []
    private var versions: [String?]
    private var confirmAnswer: BlobStreamError?
    private var readHook: (@Sendable (Int64, @escaping @Sendable () -> Void) -> ReadDecision)?
    private var opensComplete = true
    private var closeDuration: TimeInterval = 0

    /// The resource name for errors.
    public let resourceName: String
    /// The block size the stream uses by default.
    public let preferredBlockSize: Int
    /// When true, the source reports no length: the end is known only when a read finds it.
    public let hidesLength: Bool
    /// Claims ``BlobDataSource/readsImmediately`` (true only while no read hook answers `wouldBlock`).
    public let readsImmediately: Bool

    /// Creates a source over `bytes`. `versions` are the version tokens of successive opens;
    /// the last one repeats.
    public init(
        bytes: [UInt8],
        hidesLength: Bool = false,
        versions: [String?] = ["v1"],
        preferredBlockSize: Int = 64 * 1024,
        readsImmediately: Bool = false,
        name: String = "probe"
    ) {
        self.bytes = bytes
        self.hidesLength = hidesLength
        self.readsImmediately = readsImmediately
        self.versions = versions.isEmpty ? [nil] : versions
        self.preferredBlockSize = preferredBlockSize
        self.resourceName = name
    }

    /// Every call so far, in order.
    public var calls: [Call] { lock.withLock { log } }
    /// The offset each open named, in order: `nil` for an ``open(completion:)`` that named none.
    public var openOffsets: [Int64?] { lock.withLock { openedAt } }
    /// The reads so far.
    public var reads: [Call] { calls.filter { if case .read = $0 { return true } else { return false } } }
    /// Descriptions of calls that broke the contract: a read or confirm while closed, or two
    /// calls at once.
    public var violations: [String] { lock.withLock { misuse } }
    /// How many times `confirmUnchanged` was called.
    public var confirmCount: Int { calls.filter { if case .confirm = $0 { return true } else { return false } }.count }

    /// What `confirmUnchanged` answers from now on (`nil`: unchanged).
    public func answerConfirm(with error: BlobStreamError?) {
        lock.withLock { confirmAnswer = error }
    }

    /// Whether opens complete (at once) or never do, like a peer that does not answer.
    public func completeOpens(_ complete: Bool) {
        lock.withLock { opensComplete = complete }
    }

    /// Makes every `close` take `seconds`, so that a close that overlaps it is caught.
    public func slowCloses(by seconds: TimeInterval) {
        lock.withLock { closeDuration = seconds }
    }

    /// Runs `hook` before each read, outside the source's lock; it may answer for the read.
    public func onRead(_ hook: (@Sendable (_ offset: Int64, _ whenReadable: @escaping @Sendable () -> Void) -> ReadDecision)?) {
        lock.withLock { readHook = hook }
    }

    public func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        lock.withLock { openedAt.append(nil) }
        openNow(completion: completion)
    }

    /// Records `offset`, then opens as ``open(completion:)`` does.
    public func open(
        at offset: Int64, completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void
    ) {
        lock.withLock { openedAt.append(offset) }
        openNow(completion: completion)
    }

    private func openNow(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        let description = enter(.open) { () -> BlobSourceDescription? in
            guard opensComplete else { return nil }
            isOpen = true
            let version = versions.count > 1 ? versions.removeFirst() : versions[0]
            return BlobSourceDescription(length: hidesLength ? nil : Int64(bytes.count), version: version)
        }
        leave()
        if let description { completion(.success(description)) }
    }

    public func read(
        into buffer: UnsafeMutableRawBufferPointer,
        at offset: Int64,
        whenReadable: @escaping @Sendable () -> Void
    ) -> BlobSourceReadResult {
        let hook = enter(.read(offset: offset, capacity: buffer.count)) { readHook }
        defer { leave() }
        if let hook, case .answer(let result) = hook(offset, whenReadable) { return result }
        return lock.withLock {
            guard offset < Int64(bytes.count) else { return .end }
            let count = min(buffer.count, bytes.count - Int(offset))
            bytes.withUnsafeBytes { source in
                buffer.baseAddress!.copyMemory(from: source.baseAddress! + Int(offset), byteCount: count)
            }
            return .read(count)
        }
    }

    public func confirmUnchanged(at offset: Int64) -> BlobStreamError? {
        let answer = enter(.confirm(offset: offset)) { confirmAnswer }
        leave()
        return answer
    }

    public func close() {
        let duration = enter(.close) { () -> TimeInterval in
            isOpen = false
            return closeDuration
        }
        if duration > 0 { Thread.sleep(forTimeInterval: duration) }
        leave()
    }

    /// Records `call`, notes misuse, and runs `body` under the lock.
    @discardableResult
    private func enter<T>(_ call: Call, _ body: () -> T) -> T {
        lock.withLock {
            log.append(call)
            running += 1
            if running > 1 { misuse.append("\(call) overlapped another call") }
            switch call {
            case .read, .confirm:
                if !isOpen { misuse.append("\(call) while the source was closed") }
            case .open, .close:
                break
            }
            return body()
        }
    }

    private func leave() {
        lock.withLock { running -= 1 }
    }
}
