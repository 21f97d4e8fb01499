import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// `for try await` over ``BlobChunks`` yields exactly the blob's bytes from every kind of
/// source, at any start offset and chunk size, in contiguous chunks no larger than asked.
@Suite struct BlobChunksTests {
    static let size = 1024 * 1024 + 12_345
    static let offsets: [Int64] = [0, 1, 65_537, Int64(size) - 1, Int64(size)]
    static let chunkSizes = [1000, 65_536, 1 << 20]

    @Test(arguments: offsets, chunkSizes)
    func memory(offset: Int64, chunkSize: Int) async throws {
        let bytes = TempFiles.pseudoRandomBytes(count: Self.size, seed: 3)
        let chunks = BlobChunks(dataSource: MemoryDataSource(data: Data(bytes)), startOffset: offset, chunkSize: chunkSize)
        let read = try await collect(chunks, from: offset, chunkSize: chunkSize)
        #expect(read == Array(bytes[Int(offset)...]))
    }

    @Test(arguments: offsets, chunkSizes)
    func file(offset: Int64, chunkSize: Int) async throws {
        let directory = try TempFiles.makeDirectory()
        defer { TempFiles.remove(directory) }
        let path = directory + "/blob.bin"
        try TempFiles.writeRandomFile(atPath: path, size: Self.size, seed: 4)
        let chunks = try BlobChunks(url: URL(fileURLWithPath: path), startOffset: offset, chunkSize: chunkSize)
        let read = try await collect(chunks, from: offset, chunkSize: chunkSize)
        #expect(read == TempFiles.pseudoRandomBytes(count: Self.size - Int(offset), seed: 4, from: Int(offset)))
        #expect(openDescriptors(of: path) == 0, "the end of the sequence closes the file")
    }

    @Test(arguments: offsets, chunkSizes)
    func asset(offset: Int64, chunkSize: Int) async throws {
        let bytes = TempFiles.pseudoRandomBytes(count: Self.size, seed: 5)
        let store = MemoryAssetStore(answering: .on(DispatchQueue(label: "chunks-asset-store")))
        store.put("clip", bytes)
        let source = AssetDataSource(store: store, identifier: "clip", blockSize: 256 * 1024)
        let chunks = BlobChunks(dataSource: source, startOffset: offset, chunkSize: chunkSize)
        let read = try await collect(chunks, from: offset, chunkSize: chunkSize)
        #expect(read == Array(bytes[Int(offset)...]))
    }

    @Test(arguments: offsets, chunkSizes)
    func http(offset: Int64, chunkSize: Int) async throws {
        let blob = try ServedBlob(size: Self.size, seed: 6)
        defer { blob.remove() }
        let chunks = try BlobChunks(url: try blob.url(), startOffset: offset, chunkSize: chunkSize)
        let read = try await collect(chunks, from: offset, chunkSize: chunkSize)
        #expect(read == Array(blob.bytes[Int(offset)...]))
    }

    @Test func aSequenceCanBeIteratedAgain() async throws {
        let bytes = TempFiles.pseudoRandomBytes(count: 100_000, seed: 7)
        let chunks = BlobChunks(dataSource: MemoryDataSource(data: Data(bytes)), chunkSize: 30_000)
        #expect(try await collect(chunks, from: 0, chunkSize: 30_000) == bytes)
        #expect(try await collect(chunks, from: 0, chunkSize: 30_000) == bytes)
    }

    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous])
    func anUnopenedStreamIsReadFromItsOffset(mode: BlobInputStream.Mode) async throws {
        let bytes = TempFiles.pseudoRandomBytes(count: 500_000, seed: 8)
        let stream = BlobInputStream(dataSource: MemoryDataSource(data: Data(bytes)), mode: mode)
        stream.blockSize = 70_000
        try stream.seek(to: 1234)
        let read = try await collect(BlobChunks(stream: stream), from: 1234, chunkSize: 70_000)
        #expect(read == Array(bytes[1234...]))
        // The sequence read its own asynchronous stream over a synchronous one's source.
        #expect(stream.streamStatus == (mode == .asynchronous ? .closed : .notOpen))
    }

    @Test func anOpenSynchronousStreamIsRefused() async throws {
        let stream = BlobInputStream(dataSource: MemoryDataSource(data: Data(count: 10)))
        stream.open()
        await #expect {
            for try await _ in BlobChunks(stream: stream) {}
        } throws: { error in
            guard case .sourceFailed(resource: "memory", reason: let reason)? = error as? BlobStreamError else { return false }
            return reason.contains("synchronous")
        }
    }

    @Test func anOffsetPastTheEndFails() async throws {
        let chunks = BlobChunks(dataSource: MemoryDataSource(data: Data(count: 10), name: "ten"), startOffset: 11)
        await #expect(throws: BlobStreamError.invalidOffset(resource: "ten", offset: 11, length: 10)) {
            for try await _ in chunks {}
        }
    }

    @Test func chunksShareTheirMemoryAsData() async throws {
        let bytes = TempFiles.pseudoRandomBytes(count: 200_000, seed: 9)
        var kept: [Data] = []
        for try await chunk in BlobChunks(dataSource: MemoryDataSource(data: Data(bytes)), chunkSize: 64 * 1024) {
            kept.append(chunk.data)
        }
        // Every chunk is still intact after the sequence went on reading into recycled blocks.
        #expect(kept.reduce(Data(), +) == Data(bytes))
    }

    /// A chunk's `Data` is a value: changing a copy changes neither the chunk nor another
    /// `Data` of it (the block it shares was changed in place, under every other reader).
    @Test func changingAChunksDataChangesNotTheChunk() async throws {
        let bytes = TempFiles.pseudoRandomBytes(count: 200_000, seed: 10)
        for try await chunk in BlobChunks(dataSource: MemoryDataSource(data: Data(bytes)), chunkSize: 64 * 1024) {
            let before = chunk[5]
            var changed = chunk.data
            changed[5] &+= 1
            #expect(chunk[5] == before)
            #expect(chunk.data[5] == before)
            #expect(changed[5] == before &+ 1)
        }
    }
}

/// Reads `chunks` to the end, checking that every chunk starts where the last one ended and
/// holds at most `chunkSize` bytes.
func collect(_ chunks: BlobChunks, from offset: Int64, chunkSize: Int) async throws -> [UInt8] {
    var bytes: [UInt8] = []
    for try await chunk in chunks {
        #expect(chunk.offset == offset + Int64(bytes.count))
        #expect(chunk.count > 0 && chunk.count <= chunkSize)
        bytes.append(contentsOf: chunk)
    }
    return bytes
}

/// How many descriptors of this process are open on `path`.
func openDescriptors(of path: String) -> Int {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    let target = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
    return entries.filter { entry in
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + entry)) == target
    }.count
}

/// Waits, without blocking a thread of the cooperative pool, until `condition` holds or
/// `timeout` seconds pass; returns whether it holds. (The blocking `eventually` would starve the
/// very tasks an async test waits for, when tests run in parallel on few cores.) The timeout is
/// generous because in a full run those tasks share the pool with tests that block it for many
/// seconds, and the condition is looked at once more after the deadline, after a pause: a
/// starved pool may wake this wait before the task it waits for.
func eventuallyAsync(timeout: TimeInterval = 60, _ condition: () -> Bool) async -> Bool {
    let deadline = Date(timeIntervalSinceNow: timeout)
    while !condition() {
        if Date() > deadline {
            try? await Task.sleep(nanoseconds: 100_000_000)
            return condition()
        }
        try? await Task.sleep(nanoseconds: 2_000_000)
    }
    return true
}

/// The byte-at-a-time convenience over the chunks.
@Suite struct BlobBytesTests {
    @Test func yieldsEveryByteInOrder() async throws {
        let bytes = TempFiles.pseudoRandomBytes(count: 150_001, seed: 41)
        var read: [UInt8] = []
        for try await byte in BlobChunks(dataSource: MemoryDataSource(data: Data(bytes)), startOffset: 1, chunkSize: 4096).bytes {
            read.append(byte)
        }
        #expect(read == Array(bytes[1...]))
    }
}
