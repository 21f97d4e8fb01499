import BlobStream
import BlobTestSupport
import Foundation
import Glibc
import Testing

/// ``DataSourceConformance`` run against every data source of the package, and a decorator:
/// one contract, one suite (as Go ships `fstest.TestFS` for every file system).
@Suite struct DataSourceConformanceTests {
    static let bytes = TempFiles.pseudoRandomBytes(count: 300_017, seed: 71)

    private func expectConformance(
        _ abilities: DataSourceConformance.Abilities, bytes: [UInt8] = Self.bytes, make: @escaping @Sendable () throws -> any BlobDataSource
    ) async throws {
        let problems = try await blocking { try DataSourceConformance.check(abilities, bytes: bytes, make: make) }
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }

    @Test func file() async throws {
        let path = try TempFiles.makeRandomFile(prefix: "conformance", size: 0)
        defer { TempFiles.remove(path) }
        try Data(Self.bytes).write(to: URL(fileURLWithPath: path))
        try await expectConformance(.positional) { FileDataSource(path: path) }
    }

    @Test func emptyFile() async throws {
        let path = try TempFiles.makeRandomFile(prefix: "conformance-empty", size: 0)
        defer { TempFiles.remove(path) }
        try await expectConformance(.positional, bytes: []) { FileDataSource(path: path) }
    }

    @Test func memory() async throws {
        try await expectConformance(.positional) { MemoryDataSource(data: Data(Self.bytes)) }
    }

    @Test func asset() async throws {
        let folder = try TempFiles.makeDirectory(prefix: "conformance-assets")
        defer { TempFiles.remove(folder) }
        try FileManager.default.createDirectory(atPath: folder + "/library", withIntermediateDirectories: true)
        try Data(Self.bytes).write(to: URL(fileURLWithPath: folder + "/library/photo"))
        let store = try DirectoryAssetStore(directory: folder + "/library")
        try await expectConformance(.positional) { AssetDataSource(store: store, identifier: "photo") }
        // The source the folder store resolves, on its own: one version, opened once.
        try await expectConformance(.resolvedVersion) {
            let resolved = Locked<Result<any BlobDataSource, AssetStoreError>?>(nil)
            let done = DispatchSemaphore(value: 0)
            store.resolve("photo") { result in
                resolved.value = result
                done.signal()
            }
            guard done.wait(timeout: .now() + 30) == .success, let result = resolved.value else {
                throw TestSupportError("the folder store did not resolve within 30 s")
            }
            return try result.get()
        }
    }

    @Test func assetOfAStoreThatAnswersOnItsOwnQueue() async throws {
        let store = MemoryAssetStore(answering: .on(DispatchQueue(label: "conformance-asset-store")))
        store.put("photo", Self.bytes)
        try await expectConformance(.positional) { AssetDataSource(store: store, identifier: "photo") }
    }

    @Test(arguments: [HTTPDataSource.Transport.automatic, .urlSession])
    func http(transport: HTTPDataSource.Transport) async throws {
        let blob = try ServedBlob(size: 0, seed: 0)
        defer { blob.remove() }
        try blob.replace(with: Self.bytes)
        let url = try blob.url()
        try await expectConformance(.positional) {
            HTTPDataSource(url: url, configuration: .init(transport: transport))
        }
    }

    @Test func pipe() async throws {
        // Each check gets a fresh stream socket pair (the source reads sockets as it reads
        // pipes; a writer to a closed one gets EPIPE, not SIGPIPE), fed by a thread of its own.
        let bytes = Self.bytes
        try await expectConformance(.readOnce) {
            var ends: [Int32] = [0, 0]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0 else { throw TestSupportError("socketpair failed") }
            let (reader, writer) = (ends[0], ends[1])
            Thread {
                bytes.withUnsafeBytes { raw in
                    var sent = 0
                    while sent < raw.count {
                        let count = send(writer, raw.baseAddress! + sent, raw.count - sent, Int32(MSG_NOSIGNAL))
                        if count <= 0 { break }
                        sent += count
                    }
                }
                close(writer)
            }.start()
            return OwningPipe(PipeDataSource(fileDescriptor: reader, name: "conformance-pipe"), descriptor: reader)
        }
    }

    @Test func asyncSequence() async throws {
        let chunks = stride(from: 0, to: Self.bytes.count, by: 10_000).map { Array(Self.bytes[$0..<min($0 + 10_000, Self.bytes.count)]) }
        try await expectConformance(.readOnce) {
            AsyncSequenceDataSource(name: "conformance-live", chunks: AsyncStream { continuation in
                for chunk in chunks { continuation.yield(chunk) }
                continuation.finish()
            })
        }
    }

    /// The suite fails sources that break the contract: one that answers `read(0)`, one that
    /// skips a byte, one that calls `whenReadable` twice, one whose reopen names another version.
    @Test(arguments: Flaw.allCases)
    func theSuiteFailsABrokenSource(flaw: Flaw) async throws {
        let bytes = Array(Self.bytes.prefix(50_000))
        let problems = try await blocking {
            DataSourceConformance.check(.positional, bytes: bytes, timeout: 5) { Flawed(bytes: bytes, flaw: flaw) }
        }
        #expect(!problems.isEmpty, "\(flaw) went unnoticed")
    }

    enum Flaw: CaseIterable, Sendable {
        case zeroRead, skipsAByte, wakesTwice, newVersionOnReopen, wrongLength
    }

    private final class Flawed: BlobDataSource, @unchecked Sendable {
        let resourceName = "flawed"
        let bytes: [UInt8]
        let flaw: Flaw
        var opens = 0
        var blocked = false

        init(bytes: [UInt8], flaw: Flaw) {
            self.bytes = bytes
            self.flaw = flaw
        }

        func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
            opens += 1
            let length = Int64(bytes.count) + (flaw == .wrongLength ? 1 : 0)
            completion(.success(BlobSourceDescription(length: length, version: flaw == .newVersionOnReopen ? "v\(opens)" : "v")))
        }

        func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, whenReadable: @escaping @Sendable () -> Void) -> BlobSourceReadResult {
            if flaw == .zeroRead, offset > 1000 { return .read(0) }
            if flaw == .wakesTwice, !blocked {
                blocked = true
                whenReadable()
                whenReadable()
                return .wouldBlock
            }
            var start = Int(offset)
            if flaw == .skipsAByte, start > 2000 { start += 1 }
            guard start < bytes.count else { return .end }
            let count = min(buffer.count, bytes.count - start)
            buffer.copyBytes(from: bytes[start..<start + count])
            return .read(count)
        }

        func close() {}
    }

    /// A decorator (here the contract checker itself) passes on everything it does not add to.
    @Test func decorator() async throws {
        try await expectConformance(.positional) { ContractCheckingSource(MemoryDataSource(data: Data(Self.bytes))) }
    }
}

/// A pipe source that closes its inherited read end when the check is done with it (the source
/// never closes a descriptor it did not open).
private final class OwningPipe: ForwardingDataSource {
    let base: any BlobDataSource
    private let descriptor: Int32

    init(_ base: any BlobDataSource, descriptor: Int32) {
        self.base = base
        self.descriptor = descriptor
    }

    deinit {
        Glibc.close(descriptor)
    }
}
