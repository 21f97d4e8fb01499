import BlobStream
@testable import BlobUpload
import Foundation
import Testing
import BlobTestSupport

/// A source may claim a length near `Int64.max` (an HTTP server's `Content-Length` is its to
/// choose) and a tus server an offset near it: the end of a chunk there is the source's end,
/// never an arithmetic overflow that traps the process.
@Suite struct ChunkEndOverflowTests {
    static let length = Int64.max - 10

    /// Zeros at any offset of a blob of ``length`` bytes, none of them in memory.
    final class HugeZeros: BlobDataSource, @unchecked Sendable {
        var resourceName: String { "huge" }

        func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
            completion(.success(BlobSourceDescription(length: ChunkEndOverflowTests.length, version: "v1")))
        }

        func read(
            into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, whenReadable: @escaping @Sendable () -> Void
        ) -> BlobSourceReadResult {
            guard offset < ChunkEndOverflowTests.length else { return .end }
            let count = Int(min(Int64(buffer.count), ChunkEndOverflowTests.length - offset))
            buffer.baseAddress?.initializeMemory(as: UInt8.self, repeating: 0, count: count)
            return .read(count)
        }

        func close() {}
    }

    static let source = UploadSource.dataSource(name: "huge", length: length) { HugeZeros() }

    /// The reader alone: the chunk at an offset less than a chunk before the end holds the
    /// bytes up to the end.
    @Test func theChunkLessThanAChunkBeforeTheEndOfAHugeSourceEndsAtItsEnd() async throws {
        let reader = TusChunkReader(source: Self.source, chunkSize: 64)
        #expect(try await reader.start(at: Self.length - 10) == Self.length)
        try await reader.prepareChunk(at: Self.length - 10)
        #expect(reader.current.start == Self.length - 10 && reader.current.count == 10)
        await reader.close()
    }

    /// The chunk read ahead near the end of a huge source stops at its end too.
    @Test func theChunkReadAheadNearTheEndOfAHugeSourceEndsAtItsEnd() async throws {
        let reader = TusChunkReader(source: Self.source, chunkSize: 64)
        #expect(try await reader.start(at: Self.length - 100) == Self.length)
        try await reader.prepareChunk(at: Self.length - 100)
        #expect(reader.current.start == Self.length - 100 && reader.current.count == 64)
        reader.prefetchNext()
        try await reader.prepareChunk(at: Self.length - 36)
        #expect(reader.current.start == Self.length - 36 && reader.current.count == 36)
        await reader.close()
    }

    /// A resumed upload whose server has all but the last 100 bytes sends them in two PATCHes
    /// of at most a chunk and finishes at the source's end.
    @Test func aResumeNearTheEndOfAHugeSourceFinishes() async throws {
        let server = try ScriptedHTTPServer(connections: [[
            ScriptedTus.options, ScriptedTus.head(offset: Self.length - 100, length: Self.length),
            ScriptedTus.patched(Self.length - 36), ScriptedTus.patched(Self.length),
        ]])
        let client = TusClient(endpoint: ScriptedTus.endpoint(server))
        let result = try await client.upload(
            Self.source, resuming: ScriptedTus.endpoint(server).appendingPathComponent("abc"),
            options: ScriptedTus.options(chunkSize: 64))
        #expect(result.length == Self.length)
        #expect(result.bytesSent == 100)
        let patches = server.requests.filter { $0.hasPrefix("PATCH ") }
        #expect(patches.count == 2)
        #expect(patches.first?.contains("Upload-Offset: \(Self.length - 100)\r\n") == true)
        #expect(patches.last?.contains("Upload-Offset: \(Self.length - 36)\r\n") == true)
    }
}
