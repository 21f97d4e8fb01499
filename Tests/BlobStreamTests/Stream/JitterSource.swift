import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// A contract-checking source whose every answer is randomised: `wouldBlock` with
/// the wake-up called inside the read, soon on another thread, or a little later; stale
/// handles; opens that complete at once or later. Its bytes name their own offset (8-byte
/// little-endian word index), so any chunk read can be checked without knowing where it came from.
final class JitterSource: BlobDataSource, @unchecked Sendable {
    let resourceName = "jitter"
    let preferredBlockSize: Int
    let length: Int
    let bytes: [UInt8]
    var wouldBlockChance = 0.4
    var invalidateChance = 0.0
    /// Upper bound of an open's delay in seconds; 0: immediate.
    var maxOpenDelay = 0.0
    /// Upper bound of the delay of an asynchronous wake-up in seconds.
    var maxWakeDelay = 0.0005

    private let lock = NSLock()
    private var isOpen = false
    private var running = 0
    private var pendingWake: (token: Int, wake: @Sendable () -> Void)?
    private var tokens = 0
    private var openGeneration = 0
    private var misuse: [String] = []
    private(set) var opens = 0
    private(set) var closes = 0

    init(length: Int, blockSize: Int = 4096) {
        self.length = length
        preferredBlockSize = blockSize
        bytes = OffsetPattern.bytes(count: length)
    }

    var violations: [String] { lock.withLock { misuse } }
    var sourceIsOpen: Bool { lock.withLock { isOpen } }
    var hasPendingWake: Bool { lock.withLock { pendingWake != nil } }

    private func enter(_ what: String, needsOpen: Bool) {
        lock.withLock {
            running += 1
            if running > 1 { misuse.append("\(what) overlapped another call") }
            if needsOpen && !isOpen { misuse.append("\(what) while closed") }
        }
    }

    private func leave() { lock.withLock { running -= 1 } }

    /// When set, an open waits for ``releaseOpen()``.
    var holdsOpens = false
    private var heldOpen: (@Sendable () -> Void)?
    var openIsHeld: Bool { lock.withLock { heldOpen != nil } }

    /// Completes the held open on the calling thread.
    func releaseOpen() {
        let held = lock.withLock { () -> (@Sendable () -> Void)? in
            defer { heldOpen = nil }
            return heldOpen
        }
        held?()
    }

    func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        if holdsOpens {
            let description = BlobSourceDescription(length: Int64(length), version: "v1")
            lock.withLock {
                opens += 1
                heldOpen = { [self] in
                    lock.withLock { isOpen = true }
                    completion(.success(description))
                }
            }
            return
        }
        enter("open", needsOpen: false)
        let delay = Double.random(in: 0...maxOpenDelay)
        let generation = lock.withLock { () -> Int in
            opens += 1
            openGeneration += 1
            return openGeneration
        }
        let description = BlobSourceDescription(length: Int64(length), version: "v1")
        let complete: @Sendable () -> Void = { [self] in
            // A close first: drop the completion half the time (the contract allows either).
            let proceed = lock.withLock { () -> Bool in
                guard generation == openGeneration else { return Bool.random() }
                isOpen = true
                return true
            }
            if proceed { completion(.success(description)) }
        }
        if delay == 0 {
            lock.withLock { isOpen = true }
            leave()
            completion(.success(description))
        } else {
            leave()
            DispatchQueue.global().asyncAfter(deadline: .now() + delay, execute: complete)
        }
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, whenReadable: @escaping @Sendable () -> Void) -> BlobSourceReadResult {
        enter("read at \(offset)", needsOpen: true)
        defer { leave() }
        if offset > Int64(length) { lock.withLock { misuse.append("read past the end at \(offset)") } }
        if Double.random(in: 0..<1) < invalidateChance { return .invalidated }
        if Double.random(in: 0..<1) < wouldBlockChance {
            let token = lock.withLock { () -> Int in
                tokens += 1
                pendingWake = (tokens, whenReadable)
                return tokens
            }
            let fire: @Sendable () -> Void = { [self] in
                let wake = lock.withLock { () -> (@Sendable () -> Void)? in
                    guard let pending = pendingWake, pending.token == token else { return nil }
                    pendingWake = nil
                    return pending.wake
                }
                wake?()
            }
            switch Int.random(in: 0..<3) {
            case 0: fire()  // before read returns
            case 1: DispatchQueue.global().async(execute: fire)
            default: DispatchQueue.global().asyncAfter(deadline: .now() + Double.random(in: 0...maxWakeDelay), execute: fire)
            }
            return .wouldBlock
        }
        guard offset < Int64(length) else { return .end }
        let count = min(buffer.count, length - Int(offset), Int.random(in: 1...max(1, buffer.count)))
        bytes.withUnsafeBytes { source in
            buffer.baseAddress!.copyMemory(from: source.baseAddress! + Int(offset), byteCount: count)
        }
        return .read(count)
    }

    func close() {
        enter("close", needsOpen: false)
        lock.withLock {
            closes += 1
            isOpen = false
            pendingWake = nil
            openGeneration += 1
        }
        leave()
    }
}

/// Bytes that name their offset, and the check that a chunk is a run of them.
enum OffsetPattern {
    static func bytes(count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        for index in 0..<count {
            let word = UInt64(index / 8)
            bytes[index] = UInt8(truncatingIfNeeded: word >> (8 * UInt64(index % 8)))
        }
        return bytes
    }

    /// Whether `chunk` equals `blob` at some offset; chunks under 16 bytes are checked only for
    /// being somewhere plausible (true).
    static func isRun(_ chunk: UnsafeRawBufferPointer, of blob: [UInt8]) -> Bool {
        guard chunk.count >= 16 else { return true }
        for phase in 0..<8 {
            var word: UInt64 = 0
            for k in 0..<8 { word |= UInt64(chunk[phase + k]) << (8 * UInt64(k)) }
            guard word < UInt64(blob.count) else { continue }
            let start = Int(word) * 8 - phase
            guard start >= 0, start + chunk.count <= blob.count else { continue }
            let same = blob.withUnsafeBytes { memcmp($0.baseAddress! + start, chunk.baseAddress!, chunk.count) == 0 }
            if same { return true }
        }
        return false
    }

    static func matches(_ chunk: UnsafeRawBufferPointer, at offset: Int, of blob: [UInt8]) -> Bool {
        guard offset >= 0, offset + chunk.count <= blob.count else { return false }
        if chunk.isEmpty { return true }
        return blob.withUnsafeBytes { memcmp($0.baseAddress! + offset, chunk.baseAddress!, chunk.count) == 0 }
    }
}
