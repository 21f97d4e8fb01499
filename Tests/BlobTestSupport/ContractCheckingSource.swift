import BlobStream
import Foundation

/// A decorator over any data source that checks the ``BlobDataSource`` contract as its caller
/// keeps it, and records every breach instead of trapping, so a test fails with a message:
/// - two calls at once (an open, read, confirmation or close while another call runs). An open
///   runs until it returns or calls its completion, whichever comes first: the contract lets
///   it complete before it returns, and the open is over for its caller then;
/// - an open while the source is open, or while an earlier open has not completed;
/// - a read or confirmation while the source is not open (before its open completed, or after
///   a close).
///
/// It can also slow the source down, so that a consumer's close, cancellation or next iteration
/// reliably lands while a read is still running (`readDelay`), or while an open has not
/// completed (`openDelay`: the base opens at once, and its completion comes that much later,
/// from another thread, as a network source's would).
public final class ContractCheckingSource: ForwardingDataSource, @unchecked Sendable {
    public let base: any BlobDataSource
    private let readDelay: TimeInterval
    private let openDelay: TimeInterval
    private let lock = NSLock()
    /// The calls running now, by name.
    private var running: [String] = []
    /// Bumped by every open and close: an open completion from before the last of them does
    /// not open the source.
    private var epoch = 0
    private var isOpen = false
    private var isOpening = false
    /// The epoch of the open call running now, if one is.
    private var openRunning: Int?
    private var opens = 0
    private var breaches: [String] = []
    private var readHook: (@Sendable (Int64) -> Void)?

    /// Checks the calls made to `base`; every read first sleeps `readDelay` seconds, and every
    /// open completes `openDelay` seconds after the base's did.
    public init(_ base: any BlobDataSource, readDelay: TimeInterval = 0, openDelay: TimeInterval = 0) {
        self.base = base
        self.readDelay = readDelay
        self.openDelay = openDelay
    }

    /// Every breach of the contract so far, in order.
    public var violations: [String] { lock.withLock { breaches } }
    /// How many times the source was opened.
    public var openCount: Int { lock.withLock { opens } }
    /// Runs `hook` with the offset as each read starts (before its delay): a test can stop its
    /// consumer exactly while a read runs.
    public func whenReading(_ hook: (@Sendable (_ offset: Int64) -> Void)?) {
        lock.withLock { readHook = hook }
    }

    /// Whether the source is open now (an open completed, and no close came after it).
    public var isOpenNow: Bool { lock.withLock { isOpen } }

    public func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        let token = enterOpen()
        base.open { result in self.opened(result, token: token, completion: completion) }
        endOpen(token)
    }

    public func open(
        at offset: Int64, completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void
    ) {
        let token = enterOpen()
        base.open(at: offset) { result in self.opened(result, token: token, completion: completion) }
        endOpen(token)
    }

    public func read(
        into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, whenReadable: @escaping @Sendable () -> Void
    ) -> BlobSourceReadResult {
        enter("read at \(offset)", needsOpen: true)
        defer { leave("read at \(offset)") }
        lock.withLock { readHook }?(offset)
        if readDelay > 0 { Thread.sleep(forTimeInterval: readDelay) }
        return base.read(into: buffer, at: offset, whenReadable: whenReadable)
    }

    public func confirmUnchanged(at offset: Int64) -> BlobStreamError? {
        enter("confirmation at \(offset)", needsOpen: true)
        defer { leave("confirmation at \(offset)") }
        return base.confirmUnchanged(at: offset)
    }

    public func close() {
        enter("close", needsOpen: false)
        lock.withLock {
            epoch += 1
            isOpen = false
            isOpening = false
        }
        base.close()
        leave("close")
    }

    private func enterOpen() -> Int {
        enter("open", needsOpen: false)
        return lock.withLock {
            if isOpen { breaches.append("open while the source was open") }
            if isOpening { breaches.append("open while an earlier open had not completed") }
            opens += 1
            epoch += 1
            isOpening = true
            openRunning = epoch
            return epoch
        }
    }

    /// Ends the open call of `token`, unless its completion already did.
    private func endOpen(_ token: Int) {
        lock.withLock {
            guard openRunning == token else { return }
            openRunning = nil
            if let index = running.firstIndex(of: "open") { running.remove(at: index) }
        }
    }

    private func opened(
        _ result: Result<BlobSourceDescription, BlobStreamError>, token: Int,
        completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void
    ) {
        guard openDelay > 0 else { return complete(result, token: token, completion: completion) }
        DispatchQueue.global().asyncAfter(deadline: .now() + openDelay) {
            self.complete(result, token: token, completion: completion)
        }
    }

    private func complete(
        _ result: Result<BlobSourceDescription, BlobStreamError>, token: Int,
        completion: @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void
    ) {
        endOpen(token)
        lock.withLock {
            guard epoch == token else { return }
            isOpening = false
            if case .success = result { isOpen = true }
        }
        completion(result)
    }

    private func enter(_ call: String, needsOpen: Bool) {
        lock.withLock {
            if !running.isEmpty { breaches.append("\(call) while another call was running (\(running.joined(separator: ", ")))") }
            running.append(call)
            if needsOpen, !isOpen { breaches.append("\(call) while the source was not open") }
        }
    }

    private func leave(_ call: String) {
        lock.withLock {
            if let index = running.firstIndex(of: call) { running.remove(at: index) }
        }
    }
}
