import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import Synchronization
import SystemCalls
import Testing

/// The S3 part readers under the contract checker (issue 19, class 3): every data source an
/// upload makes (one per part in flight) sees only the calls the ``BlobDataSource`` contract
/// allows, in an upload cancelled while its parts read and in the whole upload after it.
@Suite struct S3ContractTests {
    @Test func partReadersKeepTheContractThroughACancellation() async throws {
        let (client, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let size = 4 * 5 * 1024 * 1024 + 17
        let path = try makeRandomFile(size: size, seed: 67)
        defer { TempFiles.remove(path) }
        let made = LockedValue<[ContractCheckingSource]>([])
        let reading = Atomic<Int>(0)
        let task = LockedValue<Task<S3UploadResult, any Error>?>(nil)
        let source = UploadSource.dataSource(name: path) {
            let checked = ContractCheckingSource(FileDataSource(path: path), readDelay: 0.002)
            // The first upload is cancelled from another thread as its eighth read starts: a
            // thread of its own, which a busy dispatch pool cannot delay past the upload's end.
            checked.whenReading { _ in
                guard reading.add(1, ordering: .relaxed).newValue == 8 else { return }
                Thread { task.withLock { $0 }?.cancel() }.start()
            }
            made.withLock { $0.append(checked) }
            return checked
        }
        var options = S3UploadOptions()
        options.partSize = 5 * 1024 * 1024
        options.parallelParts = 3
        let cancelled = Task { try await client.upload(source, key: "contract", options: options) }
        task.withLock { $0 = cancelled }
        if reading.load(ordering: .relaxed) >= 8 { cancelled.cancel() }
        if case .success = await cancelled.result { Issue.record("the first upload ended before its cancellation") }
        let result = try await client.upload(source, key: "contract", options: options)
        #expect(result.length == Int64(size))
        #expect(try MotoS3.sha256(bucket: bucket, key: "contract") == TempFiles.sha256(ofFileAtPath: path))
        let violations = made.withLock { $0 }.flatMap(\.violations)
        #expect(made.withLock { $0.count } > 1)
        #expect(violations.isEmpty, "\(violations.prefix(5))")
    }
}
