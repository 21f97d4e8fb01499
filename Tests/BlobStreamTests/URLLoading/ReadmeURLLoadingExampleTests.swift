import BlobStream
import Foundation
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// The README's "URL loading" example, verbatim but for the scheme's name, so it keeps compiling
// and working.
private final class NoiseSource: BlobDataSource {           // bytes made up on the fly
    let resourceName: String, length: Int64
    init(url: URL) { resourceName = url.absoluteString; length = Int64(url.lastPathComponent) ?? 0 }
    func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        completion(.success(BlobSourceDescription(length: length, version: "noise-\(length)", mediaType: "application/octet-stream")))
    }
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64,
              whenReadable: @escaping @Sendable () -> Void) -> BlobSourceReadResult {
        let count = Int(min(Int64(buffer.count), length - offset))
        guard count > 0 else { return .end }
        for i in 0..<count { buffer[i] = UInt8(truncatingIfNeeded: (offset + Int64(i)) &* 31) }
        return .read(count)
    }
    func close() {}
}

@Suite struct ReadmeURLLoadingExampleTests {
    @Test func noiseSchemeExampleWorks() async throws {
        let configuration = URLSessionConfiguration.default
        BlobURLProtocol.install(into: configuration)           // puts it first in protocolClasses
        let session = URLSession(configuration: configuration)
        let scheme = URLLoading.uniqueScheme("noise")
        BlobURLRegistry.shared.register(scheme: scheme) { url in NoiseSource(url: url) }
        defer { BlobURLRegistry.shared.unregister(scheme: scheme) }
        let (bytes, _) = try await session.data(from: URL(string: "\(scheme)://blob/1048576")!)   // 1 MiB
        #expect(bytes == Data((0..<1_048_576).map { UInt8(truncatingIfNeeded: Int64($0) &* 31) }))
    }
}
