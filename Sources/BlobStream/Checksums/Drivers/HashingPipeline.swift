import Foundation
internal import SystemCalls

/// Hashes buffers on a worker thread while the caller reads the next ones, so reading a file
/// and hashing it overlap on two cores: a synchronous read copies from the page cache at
/// memory speed, but that copy would otherwise add about a tenth to the time SHA-256 takes.
///
/// The caller (the only thread that touches the stream) takes a free buffer, reads into it and
/// submits it; the worker hashes submitted buffers in order and frees them. A few buffers in
/// flight are enough: the slower side sets the pace and the other waits on the condition.
final class HashingPipeline: @unchecked Sendable {
    private let condition = NSCondition()
    private var freeBuffers: [UnsafeMutableRawPointer]
    private var submitted: [(UnsafeMutableRawPointer, Int)] = []
    private var inputEnded = false
    private var workerDone = false
    private var hashedCount: Int64 = 0
    /// Touched only by the worker until it is done, then by the caller.
    private var checksum: any Checksum
    private let allBuffers: [UnsafeMutableRawPointer]

    /// Starts the worker with `bufferCount` buffers of `bufferSize` bytes.
    init(checksum: any Checksum, bufferSize: Int, bufferCount: Int = 3) {
        self.checksum = checksum
        allBuffers = (0..<bufferCount).map { _ in UnsafeMutableRawPointer.allocate(byteCount: bufferSize, alignment: 64) }
        freeBuffers = allBuffers
        WorkerThreads.shared.start("BlobStream.HashingPipeline") { [self] in work() }
    }

    deinit {
        for buffer in allBuffers { buffer.deallocate() }
    }

    /// Bytes hashed so far.
    var bytesHashed: Int64 { condition.withLock { hashedCount } }

    /// Waits for a buffer the worker has finished with.
    func takeFreeBuffer() -> UnsafeMutableRawPointer {
        condition.withLock {
            while freeBuffers.isEmpty { condition.wait() }
            return freeBuffers.removeLast()
        }
    }

    /// Hands `count` bytes at `buffer` (from ``takeFreeBuffer()``) to the worker; a count of 0
    /// just gives the buffer back.
    func submit(_ buffer: UnsafeMutableRawPointer, count: Int) {
        condition.withLock {
            if count > 0 {
                submitted.append((buffer, count))
            } else {
                freeBuffers.append(buffer)
            }
        }
        // Unlocked, as ``BlobInputStream`` wakes its reader: a waiter woken under the lock
        // would only block on it.
        condition.broadcast()
    }

    /// Waits until every submitted byte is hashed and returns the digest.
    func finish() -> ChecksumDigest {
        stopWorker()
        return checksum.finalize()
    }

    /// Stops the worker without waiting for the bytes still queued (after a failure).
    func abandon() {
        condition.withLock { submitted.removeAll() }
        stopWorker()
    }

    private func stopWorker() {
        condition.withLock {
            inputEnded = true
            condition.broadcast()
            while !workerDone { condition.wait() }
        }
    }

    private func work() {
        while true {
            let next: (UnsafeMutableRawPointer, Int)? = condition.withLock {
                while submitted.isEmpty && !inputEnded { condition.wait() }
                return submitted.isEmpty ? nil : submitted.removeFirst()
            }
            guard let (buffer, count) = next else { break }
            checksum.update(UnsafeRawBufferPointer(start: buffer, count: count))
            condition.withLock {
                hashedCount += Int64(count)
                freeBuffers.append(buffer)
            }
            condition.broadcast()
        }
        condition.withLock {
            workerDone = true
            condition.broadcast()
        }
    }
}
