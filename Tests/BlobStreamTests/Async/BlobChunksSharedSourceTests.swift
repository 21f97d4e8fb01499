import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// One ``BlobChunks`` over one data source, iterated again and again: what an iteration that
/// ends early (a `break`, a cancelled task) leaves running — its read-ahead, its deferred
/// close — belongs to it and never reaches the next iteration, and the source only ever sees
/// the calls its contract allows (``ContractCheckingSource``).
@Suite struct BlobChunksSharedSourceTests {
    static let chunkSize = 64 * 1024
    static let size = 4 * chunkSize

    /// A file source, slowed so that a read-ahead is running whenever an iteration stops.
    static func slowFile(in directory: String) throws -> ContractCheckingSource {
        let path = directory + "/blob.bin"
        try TempFiles.writeRandomFile(atPath: path, size: size, seed: 19)
        return ContractCheckingSource(FileDataSource(path: path), readDelay: 0.004)
    }

    static func collect(_ chunks: BlobChunks) async throws -> [UInt8] {
        var received: [UInt8] = []
        for try await chunk in chunks {
            chunk.withUnsafeBytes { received.append(contentsOf: $0) }
        }
        return received
    }

    @Test func iteratingAgainAfterABreakReadsTheWholeBlob() async throws {
        let directory = try TempFiles.makeDirectory()
        defer { TempFiles.remove(directory) }
        let source = try Self.slowFile(in: directory)
        let expected = TempFiles.pseudoRandomBytes(count: Self.size, seed: 19)
        let chunks = BlobChunks(dataSource: source, chunkSize: Self.chunkSize)
        var failures: [String] = []
        for pass in 0..<31 {
            // Stops after the first chunk, while the read-ahead of the second one runs.
            for try await _ in chunks { break }
            do {
                let received = try await Self.collect(chunks)
                if received != expected { failures.append("pass \(pass): \(received.count) bytes, not the blob") }
            } catch {
                failures.append("pass \(pass): \(error)")
            }
        }
        #expect(failures.isEmpty, "\(failures.count) of 31 passes failed: \(failures.prefix(3))")
        #expect(source.violations.isEmpty, "\(source.violations.prefix(5))")
        #expect(await eventuallyAsync(timeout: 5) { !source.isOpenNow }, "the last iteration left the source open")
    }

    @Test func iteratingAgainAfterACancelledIterationReadsTheWholeBlob() async throws {
        let directory = try TempFiles.makeDirectory()
        defer { TempFiles.remove(directory) }
        let source = try Self.slowFile(in: directory)
        let expected = TempFiles.pseudoRandomBytes(count: Self.size, seed: 19)
        let chunks = BlobChunks(dataSource: source, chunkSize: Self.chunkSize)
        var failures: [String] = []
        for pass in 0..<21 {
            // Cancelled while it waits for the second chunk, whose read is running.
            let cancelled = Task {
                for try await _ in chunks { withUnsafeCurrentTask { $0?.cancel() } }
            }
            _ = await cancelled.result
            do {
                let received = try await Self.collect(chunks)
                if received != expected { failures.append("pass \(pass): \(received.count) bytes, not the blob") }
            } catch {
                failures.append("pass \(pass): \(error)")
            }
        }
        #expect(failures.isEmpty, "\(failures.count) of 21 passes failed: \(failures.prefix(3))")
        #expect(source.violations.isEmpty, "\(source.violations.prefix(5))")
    }
}
