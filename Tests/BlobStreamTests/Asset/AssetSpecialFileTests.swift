import BlobStream
import BlobTestSupport
import Foundation
import Glibc
import Testing

/// A FIFO in the asset library, or offered to it, is refused at once and named, never opened
/// in a way that could block.
@Suite struct AssetSpecialFileTests {
    let folder: AssetTemporaryFolder

    init() throws {
        folder = try AssetTemporaryFolder()
    }

    @Test func aFIFOInTheLibraryIsRefusedAtOnce() throws {
        let store = try DirectoryAssetStore(directory: folder.path + "/library")
        let path = store.directory + "/fifo"
        try #require(mkfifo(path, 0o600) == 0)
        let source = AssetDataSource(store: store, identifier: "fifo")
        let outcome = FileMutation.withWatchdog(release: { FileMutation.releaseFIFOReader(path) }) {
            FileMutation.openSource(source)
        }
        #expect(outcome?.failure == .notRegularFile(path: "asset://?id=fifo (\(path))", kind: "FIFO"))
    }

    @Test func importingAFIFONamesWhatItIs() throws {
        let store = try DirectoryAssetStore(directory: folder.path + "/library")
        let path = folder.path + "/fifo"
        try #require(mkfifo(path, 0o600) == 0)
        let outcome = FileMutation.withWatchdog(release: { FileMutation.releaseFIFOReader(path) }) {
            Result { () throws(AssetStoreError) in try store.import(fileAt: path) }
        }
        #expect(outcome?.failure == .unsupportedFile(path: path, reason: "it is a FIFO, not a regular file"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.directory).isEmpty)
    }
}
