import BlobStream
import BlobTestSupport
import Foundation
import Glibc
import Testing

/// A ``DirectoryAssetStore`` asset whose file is rewritten in place while it is read ends in
/// `sourceChanged` or a stale resolved source, never in bytes of two versions.
@Suite struct AssetChangeDetectionTests {
    let folder: AssetTemporaryFolder

    init() throws {
        folder = try AssetTemporaryFolder()
    }

    private func asset(_ bytes: [UInt8]) throws -> (store: DirectoryAssetStore, identifier: String, path: String) {
        let store = try DirectoryAssetStore(directory: folder.path + "/library")
        let identifier = try store.import(fileAt: try folder.file("original", bytes))
        return (store, identifier, try store.path(of: identifier))
    }

    @Test func anUnchangedAssetIsConfirmed() throws {
        let (store, identifier, _) = try asset(assetTestBytes(count: 300_000))
        let source = AssetDataSource(store: store, identifier: identifier)
        _ = try FileMutation.openSource(source).get()
        #expect(try FileMutation.read(source, count: 300_000, at: 0).get() == assetTestBytes(count: 300_000))
        #expect(source.confirmUnchanged(at: 300_000) == nil)
        source.close()
    }

    @Test func anAssetRewrittenAfterItsLastReadIsReportedChanged() throws {
        let (store, identifier, path) = try asset(assetTestBytes(count: 300_000))
        let source = AssetDataSource(store: store, identifier: identifier)
        _ = try FileMutation.openSource(source).get()
        _ = try FileMutation.read(source, count: 300_000, at: 0).get()
        try FileMutation.rewriteInPlace(path, with: assetTestBytes(count: 300_000, seed: 77))
        try FileMutation.moveModificationTimeForward(path)

        let error = source.confirmUnchanged(at: 300_000)
        guard case .sourceChanged(source.resourceName, 300_000, let reason) = error else {
            Issue.record("not reported as changed: \(String(describing: error))")
            return
        }
        #expect(reason.contains("modification time"), "\(reason)")
        source.close()
    }

    /// The per-read check compares everything the version names, the change time included,
    /// so a rewrite that put the modification time back still makes the resolved source stale.
    @Test func aRewriteThatPutsTheModificationTimeBackMakesTheResolvedSourceStale() throws {
        let (store, identifier, path) = try asset(assetTestBytes(count: 300_000))
        let source = AssetDataSource(store: store, identifier: identifier)
        _ = try FileMutation.openSource(source).get()
        _ = try FileMutation.read(source, count: 100_000, at: 0).get()
        let opened = try FileMutation.status(path)
        try FileMutation.rewriteRestoringModificationTime(path, with: assetTestBytes(count: 300_000, seed: 78), opened: opened)

        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 100_000, alignment: 16)
        defer { buffer.deallocate() }
        #expect(source.read(into: buffer, at: 100_000, whenReadable: {}) == .invalidated)
        #expect(source.confirmUnchanged(at: 300_000) != nil)
        source.close()
    }

    /// The folder store's source reports a change under its own `asset://` name; the asset
    /// source gives it the name it was made with (a URL of another scheme, as registered).
    @Test func aChangeNamesTheResourceNameTheSourceWasGiven() throws {
        let (store, identifier, path) = try asset(assetTestBytes(count: 300_000))
        let source = AssetDataSource(store: store, identifier: identifier, resourceName: "gallery://?id=\(identifier)")
        _ = try FileMutation.openSource(source).get()
        _ = try FileMutation.read(source, count: 300_000, at: 0).get()
        try FileMutation.rewriteInPlace(path, with: assetTestBytes(count: 300_000, seed: 79))
        try FileMutation.moveModificationTimeForward(path)
        guard case .sourceChanged("gallery://?id=\(identifier)", 300_000, _)? = source.confirmUnchanged(at: 300_000) else {
            Issue.record("not reported as a change of gallery://?id=\(identifier)")
            return
        }
        source.close()
    }
}
