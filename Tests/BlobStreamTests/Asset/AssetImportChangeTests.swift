import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// An import copies the version of the file it opened, whole, or stores nothing: a file written
/// while it is copied, or one whose size does not tell its length, never becomes a short or
/// mixed asset reported as imported.
@Suite struct AssetImportChangeTests {
    let folder: AssetTemporaryFolder

    init() throws {
        folder = try AssetTemporaryFolder()
    }

    private func expectNothingStored(_ store: DirectoryAssetStore, _ path: String, _ words: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let error = #expect(throws: AssetStoreError.self, sourceLocation: sourceLocation) { _ = try store.import(fileAt: path) }
        guard case .changedWhileImported(path, let reason)? = error else {
            Issue.record("\(String(describing: error))", sourceLocation: sourceLocation)
            return
        }
        #expect(reason.contains(words), "\(reason)", sourceLocation: sourceLocation)
        #expect((try? FileManager.default.contentsOfDirectory(atPath: store.directory)) == [], sourceLocation: sourceLocation)
    }

    /// A file appended to throughout its import: its size moved, so nothing is stored.
    @Test func aFileWrittenDuringItsImportIsNotStored() throws {
        let store = try DirectoryAssetStore(directory: folder.path + "/library")
        let path = folder.path + "/growing.bin"
        try TempFiles.writeRandomFile(atPath: path, size: 32 << 20, seed: 5)
        let writer = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? writer.close() }
        _ = try writer.seekToEnd()
        let stop = Locked(false)
        let stopped = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            while !stop.value { try? writer.write(contentsOf: Data(count: 4096)) }
            stopped.signal()
        }
        defer {
            stop.value = true
            stopped.wait()
        }
        expectNothingStored(store, path, "size changed")
    }

    /// A file whose size says 0 while it has bytes (as in /proc) is not what its size says.
    @Test func aFileWithBytesPastItsSizeIsNotStored() throws {
        let store = try DirectoryAssetStore(directory: folder.path + "/library")
        expectNothingStored(store, "/proc/self/status", "bytes past its size of 0 bytes")
    }
}
