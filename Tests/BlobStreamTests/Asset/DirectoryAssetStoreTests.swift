import BlobStream
import BlobTestSupport
import Foundation
import Testing

@Suite struct DirectoryAssetStoreTests {
    let folder: AssetTemporaryFolder

    init() throws {
        folder = try AssetTemporaryFolder()
    }

    private func library() throws -> DirectoryAssetStore {
        try DirectoryAssetStore(directory: folder.path + "/library")
    }

    /// Opens a resolved source (it completes at once: it is open from its resolution).
    private func open(_ source: any BlobDataSource) throws -> BlobSourceDescription {
        let opened = Locked<Result<BlobSourceDescription, BlobStreamError>?>(nil)
        source.open { opened.value = $0 }
        return try #require(opened.value, "the open did not complete at once").get()
    }

    /// Opens `source` and reads it to its length, or `nil` when a read answers anything else.
    private func readAll(_ source: any BlobDataSource) throws -> [UInt8]? {
        let length = try #require(try open(source).length)
        var bytes: [UInt8] = []
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 100_000, alignment: 16)
        defer { buffer.deallocate() }
        while Int64(bytes.count) < length {
            guard case .read(let count) = source.read(into: buffer, at: Int64(bytes.count), whenReadable: {}) else { return nil }
            bytes += buffer.prefix(count)
        }
        #expect(source.read(into: buffer, at: length, whenReadable: {}) == .end)
        return bytes
    }

    private func read(_ source: any BlobDataSource, _ buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> BlobSourceReadResult {
        source.read(into: buffer, at: offset, whenReadable: {})
    }

    @Test func importCopiesTheFileUnderANewIdentifier() async throws {
        let store = try library()
        let content = assetTestBytes(count: 300_000)
        let original = try folder.file("photo.jpg", content)
        let identifier = try store.import(fileAt: original)
        #expect(UUID(uuidString: identifier) != nil)
        try store.validate(identifier: identifier)
        // A copy: changing the original does not change the asset.
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: original))
        let source = try await store.resolve(identifier)
        #expect(source.readsImmediately)
        #expect(source.resourceName == "asset://?id=\(identifier)")
        #expect(try readAll(source) == content)
        let description = try open(source)
        #expect(description.length == 300_000)
        #expect(description.version != nil)
        // Only the asset is left in the folder: the temporary copy was renamed into place.
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.directory) == [identifier])
        #expect(try store.path(of: identifier) == store.directory + "/" + identifier)
        #expect(try store.import(fileAt: original) != identifier)
    }

    @Test func replacingTheFileMakesResolvedSourcesStale() async throws {
        let store = try library()
        let content = assetTestBytes(count: 200_000)
        let identifier = try store.import(fileAt: try folder.file("a", content))
        let source = try await store.resolve(identifier)
        let version = try open(source).version
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1000, alignment: 16)
        defer { buffer.deallocate() }
        #expect(read(source, buffer, at: 0) == .read(1000))
        // Same size and same bytes, but a new file: a new version.
        try store.replace(identifier: identifier, withFileAt: try folder.file("b", content))
        #expect(read(source, buffer, at: 1000) == .invalidated)
        // Stale for good, at any offset.
        #expect(read(source, buffer, at: 1000) == .invalidated)
        #expect(read(source, buffer, at: 0) == .invalidated)
        #expect(read(source, buffer, at: 200_000) == .invalidated)
        let replaced = try await store.resolve(identifier)
        #expect(try open(replaced).version != version)
        #expect(try readAll(replaced) == content)
    }

    @Test func rewritingTheFileInPlaceMakesResolvedSourcesStale() async throws {
        let store = try library()
        let identifier = try store.import(fileAt: try folder.file("a", assetTestBytes(count: 5000)))
        let source = try await store.resolve(identifier)
        _ = try open(source)
        let handle = try #require(FileHandle(forWritingAtPath: try store.path(of: identifier)))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data([9]))
        try handle.close()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 100, alignment: 16)
        defer { buffer.deallocate() }
        #expect(read(source, buffer, at: 0) == .invalidated)
    }

    @Test func removedAssetIsNotFoundAndItsResolvedSourcesGoStale() async throws {
        let store = try library()
        let identifier = try store.import(fileAt: try folder.file("a", assetTestBytes(count: 5000)))
        let source = try await store.resolve(identifier)
        _ = try open(source)
        try store.remove(identifier: identifier)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 100, alignment: 16)
        defer { buffer.deallocate() }
        #expect(read(source, buffer, at: 0) == .invalidated)
        await #expect(throws: AssetStoreError.notFound(identifier: identifier)) { try await store.resolve(identifier) }
        #expect(throws: AssetStoreError.notFound(identifier: identifier)) { try store.remove(identifier: identifier) }
        #expect(throws: AssetStoreError.notFound(identifier: identifier)) {
            try store.replace(identifier: identifier, withFileAt: try folder.file("b", [1]))
        }
    }

    /// A resolved source is one version: closing it releases the file, after which it is not
    /// read and cannot be opened again (resolve again instead).
    @Test func aClosedResolvedSourceIsNotReadAndNotReopened() async throws {
        let store = try library()
        let identifier = try store.import(fileAt: try folder.file("a", assetTestBytes(count: 5000)))
        let source = try await store.resolve(identifier)
        _ = try open(source)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 100, alignment: 16)
        defer { buffer.deallocate() }
        #expect(read(source, buffer, at: 5001) == .failed(.invalidOffset(resource: "asset://?id=\(identifier)", offset: 5001, length: 5000)))
        source.close()
        source.close()
        #expect(read(source, buffer, at: 0) == .failed(.notOpen))
        #expect(source.confirmUnchanged(at: 5000) == nil)
        #expect { try open(source) } throws: { error in
            guard case .sourceFailed("asset://?id=\(identifier)", let reason)? = error as? BlobStreamError else { return false }
            return reason.contains("resolve the asset again")
        }
    }

    @Test(arguments: [
        "", ".", "..", "../outside", "a/b", "/etc/passwd", "..%2Foutside", "%2e%2e", "%2f", "%252e%252e",
        "a\\b", "nul\u{0}byte", "line\nbreak", ".import-hidden", String(repeating: "x", count: 256),
    ])
    func identifiersThatCouldEscapeTheFolderAreRefused(identifier: String) async throws {
        let store = try library()
        let file = try folder.file("f", [1, 2, 3])
        func isInvalid(_ error: any Error) -> Bool {
            if case .invalidIdentifier(identifier, _)? = error as? AssetStoreError { return true }
            return false
        }
        #expect(throws: AssetStoreError.self) { try store.validate(identifier: identifier) }
        await #expect { try await store.resolve(identifier) } throws: { isInvalid($0) }
        #expect { try store.remove(identifier: identifier) } throws: { isInvalid($0) }
        #expect { try store.replace(identifier: identifier, withFileAt: file) } throws: { isInvalid($0) }
        #expect { try store.path(of: identifier) } throws: { isInvalid($0) }
    }

    @Test func symbolicLinksOutOfTheFolderAreRefused() async throws {
        let store = try library()
        let secret = try folder.file("secret", Array("outside the library".utf8))
        try FileManager.default.createSymbolicLink(atPath: store.directory + "/link", withDestinationPath: secret)
        await #expect { try await store.resolve("link") } throws: { error in
            guard case .invalidIdentifier("link", let reason) = error as? AssetStoreError else { return false }
            return reason.contains("symbolic link")
        }
        #expect { try store.remove(identifier: "link") } throws: { error in
            if case .invalidIdentifier("link", _) = error as? AssetStoreError { return true }
            return false
        }
        #expect(FileManager.default.fileExists(atPath: secret))
    }

    @Test func importRefusesMissingFilesAndDirectories() throws {
        let store = try library()
        #expect(throws: AssetStoreError.system(path: folder.path + "/missing", operation: "open", errno: ENOENT)) {
            try store.import(fileAt: folder.path + "/missing")
        }
        #expect(throws: AssetStoreError.unsupportedFile(path: folder.path, reason: "it is a directory")) {
            try store.import(fileAt: folder.path)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.directory).isEmpty)
    }

    @Test func libraryFolderIsCreatedAndMustBeADirectory() throws {
        let nested = folder.path + "/a/b/library"
        let store = try DirectoryAssetStore(directory: nested)
        #expect(store.directory == nested)
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: nested, isDirectory: &isDirectory) && isDirectory.boolValue)
        let file = try folder.file("plain", [1])
        #expect(throws: AssetStoreError.system(path: file, operation: "open the library folder", errno: ENOTDIR)) {
            try DirectoryAssetStore(directory: file)
        }
    }

    @Test func errorsBecomeStreamErrorsNamingTheAssetURL() {
        let resource = "asset://?id=x"
        #expect(AssetStoreError.notFound(identifier: "x").blobStreamError(resource: resource) == .notFound(resource: resource))
        #expect(AssetStoreError.system(path: "/l/x", operation: "open", errno: EACCES).blobStreamError(resource: resource)
            == .permissionDenied(resource: resource))
        let invalid = AssetStoreError.invalidIdentifier("..", reason: "it names a directory, not an asset")
        #expect(invalid.blobStreamError(resource: resource) == .sourceFailed(resource: resource, reason: "invalid asset identifier \"..\": it names a directory, not an asset"))
    }
}
