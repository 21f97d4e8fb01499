import BlobStream
import BlobTestSupport
import BlobUpload
import Foundation
import Synchronization
import SystemCalls
import Testing

/// Uploads that take their bytes from one data source, which a caller may keep and reopen (the
/// ``BlobDataSource`` contract allows it): an upload cancelled while its read runs closes its
/// stream, whose source closes when that read returns, and the next upload of the source is
/// not hit by that late close (``ContractCheckingSource`` sees only the calls the contract
/// allows). Against tuspyserver.
@Suite struct UploadSharedSourceTests {
    @Test func anUploadStartedAsTheCancelledOneStillReadsGetsEveryByte() async throws {
        try TestServers.requireTus()
        let size = 1 << 20
        let path = try makeRandomFile(size: size, seed: 37)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let source = ContractCheckingSource(FileDataSource(path: path), readDelay: 0.01)
        let upload = UploadSource.dataSource(name: path) { source }
        let client = TusClient(endpoint: TestServers.tusFilesURL)
        var failures: [String] = []
        var made: [URL] = []
        defer { TestServers.removeUploads(made) }
        for pass in 0..<5 {
            let cancelling = Atomic<Bool>(false)
            let task = LockedValue<Task<TusUploadResult, any Error>?>(nil)
            // Cancelled from another thread once a read runs (the hook is in place before the
            // upload starts, so its first read is seen); the next upload starts at once, while
            // that read is still running.
            source.whenReading { _ in
                guard !cancelling.exchange(true, ordering: .relaxed) else { return }
                DispatchQueue.global().async { task.withLock { $0 }?.cancel() }
            }
            let cancelled = Task { try await client.upload(upload) }
            task.withLock { $0 = cancelled }
            if cancelling.load(ordering: .relaxed) { cancelled.cancel() }
            // A tus server busy with other tests' uploads, in a loaded suite run, may take a
            // minute and more to create the upload: the bound only stops a hang.
            let deadline = Date(timeIntervalSinceNow: 300)
            while !cancelling.load(ordering: .relaxed), Date() < deadline { try await Task.sleep(nanoseconds: 1_000_000) }
            let started = cancelling.load(ordering: .relaxed)
            #expect(started, "the first upload never read")
            source.whenReading(nil)
            if !started {
                // Not the race under test: two live uploads of one source would break the contract.
                cancelled.cancel()
                _ = await cancelled.result
                return
            }
            do {
                let second = try await client.upload(upload).uploadURL
                made.append(second)
                if try !tusStoredCopyMatches(second, file: path) { failures.append("pass \(pass): the stored copy differs") }
            } catch {
                failures.append("pass \(pass): \(error)")
            }
            if case .success(let first) = await cancelled.result { made.append(first.uploadURL) }
        }
        #expect(failures.isEmpty, "\(failures.count) of 5 passes failed: \(failures.prefix(3))")
        #expect(source.violations.isEmpty, "\(source.violations.prefix(5))")
    }
}
