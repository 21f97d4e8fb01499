import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// Checksums of one data source, one after another: a calculation cancelled while its read
/// runs closes its stream, whose source closes when that read returns; the next calculation
/// over the same source still gets every byte, and the source sees only the calls its contract
/// allows (``ContractCheckingSource``).
@Suite struct ChecksumSharedSourceTests {
    static let size = 4 * 64 * 1024

    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous])
    func aCalculationAfterACancelledOneIsRight(mode: BlobInputStream.Mode) throws {
        let directory = try TempFiles.makeDirectory()
        defer { TempFiles.remove(directory) }
        let path = directory + "/blob.bin"
        try TempFiles.writeRandomFile(atPath: path, size: Self.size, seed: 31)
        let expected = try TempFiles.sha256(ofFileAtPath: path)
        let source = ContractCheckingSource(FileDataSource(path: path), readDelay: 0.008)
        let events = DispatchQueue(label: "ChecksumSharedSourceTests.events")
        var failures: [String] = []
        for pass in 0..<10 {
            let cancelled = ChecksumCalculator(algorithm: .sha256, bufferSize: 64 * 1024)
            let reading = Locked(false)
            // Cancelled from inside a read, so the close surely lands while that read runs.
            source.whenReading { offset in
                guard !reading.value else { return }
                reading.value = true
                cancelled.cancel()
            }
            let finished = DispatchSemaphore(value: 0)
            let stream = Unchecked(BlobInputStream(dataSource: source, mode: mode))
            switch mode {
            case .synchronous:
                Thread.detachNewThread {
                    _ = try? cancelled.digest(of: stream.value)
                    finished.signal()
                }
            case .asynchronous:
                cancelled.start(stream.value, delivery: .queue(events)) { _ in finished.signal() }
            }
            #expect(eventually(timeout: 5) { reading.value })
            source.whenReading(nil)
            do {
                let digest = try ChecksumCalculator(algorithm: .sha256).digest(of: BlobInputStream(dataSource: source, mode: mode))
                if digest.hex != expected { failures.append("pass \(pass): digest \(digest.hex)") }
            } catch {
                failures.append("pass \(pass): \(error)")
            }
            if finished.wait(timeout: .now() + 10) != .success { failures.append("pass \(pass): the cancelled calculation never ended") }
        }
        #expect(failures.isEmpty, "\(failures.count) of 10 passes failed: \(failures.prefix(3))")
        #expect(source.violations.isEmpty, "\(source.violations.prefix(5))")
    }

    /// The same through ``ChecksumAlgorithm/digest(of:startOffset:)`` (``BlobChunks``): a task
    /// cancelled while its read runs.
    @Test func anAsyncDigestAfterACancelledOneIsRight() async throws {
        let directory = try TempFiles.makeDirectory()
        defer { TempFiles.remove(directory) }
        let path = directory + "/blob.bin"
        try TempFiles.writeRandomFile(atPath: path, size: Self.size, seed: 19)
        let expected = try TempFiles.sha256(ofFileAtPath: path)
        let source = ContractCheckingSource(FileDataSource(path: path), readDelay: 0.004)
        var failures: [String] = []
        for pass in 0..<15 {
            // Cancelled as its read starts, so the close lands while that read runs.
            let cancelled = Task { try await ChecksumAlgorithm.sha256.digest(of: source) }
            source.whenReading { _ in cancelled.cancel() }
            _ = await cancelled.result
            source.whenReading(nil)
            do {
                let digest = try await ChecksumAlgorithm.sha256.digest(of: source)
                if digest.hex != expected { failures.append("pass \(pass): digest \(digest.hex)") }
            } catch {
                failures.append("pass \(pass): \(error)")
            }
        }
        #expect(failures.isEmpty, "\(failures.count) of 15 passes failed: \(failures.prefix(3))")
        #expect(source.violations.isEmpty, "\(source.violations.prefix(5))")
    }
}
