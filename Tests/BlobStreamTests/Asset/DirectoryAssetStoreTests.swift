import BlobStream
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

    private func readAll(_ representation: any AssetRepresentation) -> [UInt8]? {
        var bytes: [UInt8] = []
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 100_000, alignment: 16)
        defer { buffer.deallocate() }
        while Int64(bytes.count) < representation.size {
            let room = UnsafeMutableRawBufferPointer(rebasing: buffer.prefix(Int(min(Int64(buffer.count), representation.size - Int64(bytes.count)))))
            guard case .read(let count) = representation.getBytes(into: room, fromOffset: Int64(bytes.count)) else { return nil }
            bytes += room.prefix(count)
        }
        return bytes
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
        let representation = try await store.resolve(identifier)
        #expect(representation.size == 300_000)
        #expect(representation.version != nil)
        #expect(readAll(representation) == content)
        // Only the asset is left in the folder: the temporary copy was renamed into place.
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.directory) == [identifier])
        #expect(try store.path(of: identifier) == store.directory + "/" + identifier)
        #expect(try store.import(fileAt: original) != identifier)
    }

    @Test func replacingTheFileMakesOpenRepresentationsStale() async throws {
        let store = try library()
        let content = assetTestBytes(count: 200_000)
        let identifier = try store.import(fileAt: try folder.file("a", content))
        let representation = try await store.resolve(identifier)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1000, alignment: 16)
        defer { buffer.deallocate() }
        #expect(representation.getBytes(into: buffer, fromOffset: 0) == .read(1000))
        // Same size and same bytes, but a new file: a new version.
        try store.replace(identifier: identifier, withFileAt: try folder.file("b", content))
        #expect(representation.getBytes(into: buffer, fromOffset: 1000) == .invalidated)
        #expect(representation.getBytes(into: buffer, fromOffset: 1000) == .invalidated)
        let replaced = try await store.resolve(identifier)
        #expect(replaced.version != representation.version)
        #expect(readAll(replaced) == content)
    }

    @Test func rewritingTheFileInPlaceMakesOpenRepresentationsStale() async throws {
        let store = try library()
        let identifier = try store.import(fileAt: try folder.file("a", assetTestBytes(count: 5000)))
        let representation = try await store.resolve(identifier)
        let handle = try #require(FileHandle(forWritingAtPath: try store.path(of: identifier)))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data([9]))
        try handle.close()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 100, alignment: 16)
        defer { buffer.deallocate() }
        #expect(representation.getBytes(into: buffer, fromOffset: 0) == .invalidated)
    }

    @Test func removedAssetIsNotFoundAndItsRepresentationsGoStale() async throws {
        let store = try library()
        let identifier = try store.import(fileAt: try folder.file("a", assetTestBytes(count: 5000)))
        let representation = try await store.resolve(identifier)
        try store.remove(identifier: identifier)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 100, alignment: 16)
        defer { buffer.deallocate() }
        #expect(representation.getBytes(into: buffer, fromOffset: 0) == .invalidated)
        await #expect(throws: AssetStoreError.notFound(identifier: identifier)) { try await store.resolve(identifier) }
        #expect(throws: AssetStoreError.notFound(identifier: identifier)) { try store.remove(identifier: identifier) }
        #expect(throws: AssetStoreError.notFound(identifier: identifier)) {
            try store.replace(identifier: identifier, withFileAt: try folder.file("b", [1]))
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
