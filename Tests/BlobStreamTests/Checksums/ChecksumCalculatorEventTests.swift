@testable import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// The asynchronous path: the calculator as the delegate of an asynchronous BlobInputStream,
/// with events on a dispatch queue or a run loop.
@Suite struct ChecksumCalculatorEventTests {
    static let blob = ChecksumFixtures.bytes(count: 2 << 20 + 777, seed: 1234)

    /// A source whose bytes arrive later, as from a network.
    func slowSource() -> ScriptedDataSource {
        let source = ScriptedDataSource(bytes: Self.blob, staleOffsets: [300_000])
        source.wouldBlockDelay = 0.0005
        source.openBehaviour = .later(delay: 0.01)
        return source
    }

    @Test func eventsOnADispatchQueue() throws {
        let queue = DispatchQueue(label: "checksum-events")
        let stream = BlobInputStream(dataSource: slowSource(), mode: .asynchronous)
        let outcome = Locked<Result<ChecksumDigest, BlobStreamError>?>(nil)
        let reports = Locked<[TransferProgress]>([])
        let completions = Locked(0)
        let done = DispatchSemaphore(value: 0)
        ChecksumCalculator(algorithm: .sha256, bufferSize: 64 * 1024).start(stream, delivery: .queue(queue)) { progress in
            dispatchPrecondition(condition: .onQueue(queue))
            reports.mutate { $0.append(progress) }
        } completion: { result in
            dispatchPrecondition(condition: .onQueue(queue))
            outcome.value = result
            completions.mutate { $0 += 1 }
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 60) == .success)
        #expect(outcome.value == .success(SHA256.digest(of: Self.blob)))
        #expect(reports.value.last == TransferProgress(completedBytes: Int64(Self.blob.count), totalBytes: Int64(Self.blob.count)))
        #expect(stream.streamStatus == .closed)
        Thread.sleep(forTimeInterval: 0.05)
        #expect(completions.value == 1)
    }

    @Test func eventsOnARunLoop() throws {
        let stream = Unchecked(BlobInputStream(dataSource: slowSource(), mode: .asynchronous))
        let outcome = Locked<Result<ChecksumDigest, BlobStreamError>?>(nil)
        let onLoopThread = Locked(true)
        let done = DispatchSemaphore(value: 0)
        let calculator = ChecksumCalculator(algorithm: .crc32c)
        let loop = RunLoopThread(name: "checksum-run-loop") { runLoop, mode in
            let expected = Unchecked(runLoop)
            calculator.start(stream.value, delivery: .runLoop(runLoop, mode: mode)) { _ in
                if RunLoop.current !== expected.value { onLoopThread.value = false }
            } completion: { result in
                if RunLoop.current !== expected.value { onLoopThread.value = false }
                outcome.value = result
                done.signal()
            }
        }
        defer { loop.stop() }
        #expect(done.wait(timeout: .now() + 60) == .success)
        #expect(outcome.value == .success(CRC32C.digest(of: Self.blob)))
        #expect(onLoopThread.value)
    }

    @Test(arguments: ChecksumAlgorithm.allCases)
    func asyncAwait(algorithm: ChecksumAlgorithm) async throws {
        let stream = BlobInputStream(dataSource: slowSource(), mode: .asynchronous)
        let digest = try await ChecksumCalculator(algorithm: algorithm).digest(of: stream)
        var expected = algorithm.makeChecksum()
        expected.update(Self.blob)
        #expect(digest == expected.finalize())
    }

    @Test func asyncAwaitWithStreamsThatSendNoEvents() async throws {
        // Foundation's streams and synchronous BlobInputStreams are read on a queue.
        let viaData = try await ChecksumCalculator(algorithm: .md5).digest(of: InputStream(data: Data(Self.blob)))
        #expect(viaData == MD5.digest(of: Self.blob))
        let synchronous = BlobInputStream(dataSource: MemoryDataSource(data: Data(Self.blob)))
        #expect(try await ChecksumCalculator(algorithm: .md5).digest(of: synchronous) == viaData)
    }

    @Test func aFailureIsReportedNotADigest() async {
        let error = BlobStreamError.httpStatus(url: "http://127.0.0.1/blob", statusCode: 503)
        let stream = BlobInputStream(dataSource: FailingDataSource(bytes: Self.blob, failAt: 999_999, error: error), mode: .asynchronous)
        await #expect(throws: error) {
            try await ChecksumCalculator().digest(of: stream)
        }
    }

    @Test func cancellingTheTaskCancelsAStalledCalculation() async {
        let source = ScriptedDataSource(bytes: Self.blob)
        source.stallReads = true
        let stream = Unchecked(BlobInputStream(dataSource: source, mode: .asynchronous))
        let task = Task { try await ChecksumCalculator().digest(of: stream.value) }
        try? await Task.sleep(nanoseconds: 200_000_000)
        task.cancel()
        await #expect(throws: BlobStreamError.cancelled) { try await task.value }
        #expect(stream.value.streamStatus == .closed)
    }

    @Test func cancelReportsOnceAndStopsProgress() {
        let source = ScriptedDataSource(bytes: Self.blob)
        source.wouldBlockDelay = 0.002
        let stream = BlobInputStream(dataSource: source, mode: .asynchronous)
        let calculator = ChecksumCalculator(bufferSize: 4096)
        let completions = Locked<[Result<ChecksumDigest, BlobStreamError>]>([])
        let progressAfterCompletion = Locked(false)
        let done = DispatchSemaphore(value: 0)
        calculator.start(stream, delivery: .queue(DispatchQueue(label: "cancel-test"))) { progress in
            if !completions.value.isEmpty { progressAfterCompletion.value = true }
            if progress.completedBytes >= 64 * 1024 { calculator.cancel() }
        } completion: { result in
            completions.mutate { $0.append(result) }
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 30) == .success)
        Thread.sleep(forTimeInterval: 0.1)
        #expect(completions.value == [.failure(.cancelled)])
        #expect(!progressAfterCompletion.value)
        #expect(stream.streamStatus == .closed)
    }

    @Test func anOpenedAsynchronousStreamIsRefused() {
        let stream = BlobInputStream(dataSource: MemoryDataSource(data: Data(Self.blob)), mode: .asynchronous)
        stream.open()
        defer { stream.close() }
        #expect {
            try ChecksumCalculator().digest(of: stream)
        } throws: { error in
            guard case BlobStreamError.sourceFailed(_, let reason) = error else { return false }
            return reason.contains("unopened")
        }
    }
}
