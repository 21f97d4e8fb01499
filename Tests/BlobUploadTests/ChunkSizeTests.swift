import BlobStream
@testable import BlobUpload
import Foundation
import Testing
import BlobTestSupport

/// No chunk size makes the upload trap: the buffers hold at most what the source has, and a
/// size out of bounds is a typed error before anything is sent.
@Suite struct ChunkSizeTests {
    @Test func theBuffersHoldNoMoreThanTheSource() async throws {
        let reader = TusChunkReader(source: ScriptedTus.source(3000), chunkSize: TusUploadOptions.maxChunkSize)
        #expect(try await reader.start(at: 0) == 3000)
        #expect(reader.bufferCapacity == 3000)
        try await reader.prepareChunk(at: 1000)
        #expect(reader.chunkData(copying: true).count == 2000)
        await reader.close()
    }

    @Test func theLargestChunkSizeUploadsASmallSource() async throws {
        let server = try ScriptedHTTPServer(connections: [[
            ScriptedTus.options, ScriptedTus.created("/files/a"), ScriptedTus.patched(3000),
        ]])
        let result = try await TusClient(endpoint: ScriptedTus.endpoint(server)).upload(
            ScriptedTus.source(3000), options: ScriptedTus.options(chunkSize: TusUploadOptions.maxChunkSize))
        #expect(result.length == 3000)
    }

    @Test(arguments: [0, -1, TusUploadOptions.maxChunkSize + 1, 99_999_999_999_999, Int.max])
    func aChunkSizeOutOfBoundsIsRefusedBeforeAnythingIsSent(chunkSize: Int) async throws {
        // A server that would answer, so a request sent would be seen.
        let server = try ScriptedHTTPServer(connections: [[ScriptedTus.options]], address: .random())
        await #expect {
            _ = try await TusClient(endpoint: server.url("/files/")).upload(
                ScriptedTus.source(3000), options: ScriptedTus.options(chunkSize: chunkSize))
        } throws: { error in
            guard case .invalidOption("chunkSize", let reason)? = error as? BlobUploadError else { return false }
            return reason.contains(String(chunkSize))
        }
        #expect(!server.wasReached)
    }

    /// Delays from a policy that no sleep can take (infinite, not a number) do not trap either.
    @Test func anUnboundedRetryDelayIsClamped() {
        var policy = TusRetryPolicy()
        policy.maxDelay = .infinity
        policy.initialDelay = .infinity
        #expect(TusUpload.nanoseconds(forDelay: policy.delay(forAttempt: 3)) == TusUpload.nanoseconds(forDelay: 86_400))
        #expect(TusUpload.nanoseconds(forDelay: .nan) == 0)
        #expect(TusUpload.nanoseconds(forDelay: -1) == 0)
        #expect(TusUpload.nanoseconds(forDelay: 0.5) == 500_000_000)
        policy.initialDelay = 1
        policy.maxDelay = 8
        for jitter in [-1, .nan, .infinity, 5] {
            policy.jitter = jitter
            #expect((0...16).contains(policy.delay(forAttempt: 2)))
        }
    }
}
