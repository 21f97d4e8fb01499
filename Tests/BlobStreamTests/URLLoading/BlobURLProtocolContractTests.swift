import BlobStream
import BlobTestSupport
import Foundation
import Synchronization
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
import SystemCalls
#endif

/// `BlobURLProtocol` under the contract checker (issue 19, class 3): one registered data source
/// shared by every request of its scheme, requests cancelled while a read runs, and the next
/// request reading it whole; the source sees only the calls the ``BlobDataSource`` contract
/// allows.
@Suite struct BlobURLProtocolContractTests {
    @Test func requestsOfOneSharedSourceAfterCancelledOnesReadItWhole() async throws {
        let bytes = TempFiles.pseudoRandomBytes(count: 4 << 20, seed: 77)
        let source = ContractCheckingSource(MemoryDataSource(data: Data(bytes)), readDelay: 0.01)
        let scheme = URLLoading.uniqueScheme("contract")
        BlobURLRegistry.shared.register(scheme: scheme) { _ in source }
        defer { BlobURLRegistry.shared.unregister(scheme: scheme) }
        let url = URL(string: "\(scheme)://blob")!
        let session = URLLoading.session()
        var failures: [String] = []
        var cancelledMidRead = 0
        for pass in 0..<5 {
            // Cancelled from another thread as its second read starts: the next request comes
            // while that read still runs.
            let task = LockedValue<Task<(Data, URLResponse), any Error>?>(nil)
            let reads = Atomic<Int>(0)
            source.whenReading { _ in
                guard reads.add(1, ordering: .relaxed).newValue == 2 else { return }
                DispatchQueue.global().async { task.withLock { $0 }?.cancel() }
            }
            let cancelled = Task { try await session.data(from: url) }
            task.withLock { $0 = cancelled }
            if case .failure = await cancelled.result { cancelledMidRead += 1 }
            source.whenReading(nil)
            do {
                let (data, _) = try await session.data(from: url)
                if data != Data(bytes) { failures.append("pass \(pass): \(data.count) bytes, not the blob") }
            } catch {
                failures.append("pass \(pass): \(error)")
            }
        }
        #expect(cancelledMidRead > 0, "no request was cancelled while it read")
        #expect(failures.isEmpty, "\(failures.count) of 5 passes failed: \(failures.prefix(3))")
        #expect(source.violations.isEmpty, "\(source.violations.prefix(5))")
    }
}
