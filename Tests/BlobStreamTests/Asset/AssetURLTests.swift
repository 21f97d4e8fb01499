import BlobStream
import Foundation
import Testing

@Suite struct AssetURLTests {
    @Test(arguments: ["photo", "a b&c=d/é?#%", "3F2504E0-4F89-11D3-9A0C-0305E82C3301/L0/001"])
    func identifiersSurviveTheRoundTrip(identifier: String) throws {
        let url = try #require(AssetURL.url(identifier: identifier))
        #expect(url.scheme == "asset")
        #expect(try AssetURL.identifier(in: url) == identifier)
    }

    @Test func urlTextIsTheDocumentedForm() {
        #expect(AssetURL.url(identifier: "abc-1")?.absoluteString == "asset://?id=abc-1")
        #expect(AssetURL.url(identifier: "x", scheme: "photos")?.absoluteString == "photos://?id=x")
        #expect(AssetURL.url(identifier: "x", scheme: "not a scheme") == nil)
    }

    @Test(arguments: [
        ("asset://", "no id"),
        ("asset://?name=x", "unsupported query parameter \"name\""),
        ("asset://?id=", "id is empty"),
        ("asset://?id", "id is empty"),
        ("asset://host?id=x", "has a host"),
        ("asset:///library/x?id=x", "has a path"),
        ("asset://?id=x/../y#top", "has a fragment"),
        ("asset://?id=1&id=2", "more than one id"),
        ("asset://?id=1&width=1920", "unsupported query parameter \"width\""),
        ("asset://user@?id=1", "credentials"),
    ])
    func malformedURLsAreUnsupportedWithAReason(text: String, reason: String) throws {
        let url = try #require(URL(string: text))
        #expect {
            try AssetURL.identifier(in: url)
        } throws: { error in
            guard case .unsupportedURL(let named, let why)? = error as? BlobStreamError else { return false }
            return named == text && why.contains(reason) && why.contains("asset://?id=ID")
        }
    }

    @Test func aRegisteredStoreServesItsSchemeCaseInsensitively() throws {
        let registry = BlobURLRegistry()
        let store = MemoryAssetStore()
        store.put("cat", Array("meow".utf8))
        registry.register(assetStore: store, scheme: "photos", blockSize: 4096)
        #expect(registry.schemes == ["photos"])
        let source = try registry.dataSource(for: try #require(URL(string: "PHOTOS://?id=cat")))
        let asset = try #require(source as? AssetDataSource)
        #expect(asset.identifier == "cat")
        #expect(asset.resourceName == "PHOTOS://?id=cat")
        #expect(asset.preferredBlockSize == 4096)
        #expect(asset.store === store)
        let description = try #require(openAndWait(asset)).get()
        #expect(readToEnd(asset, description: description, bufferSize: 4096).bytes == Array("meow".utf8))
        // Other schemes are still unknown.
        #expect(throws: BlobStreamError.self) { try registry.dataSource(for: try #require(URL(string: "asset://?id=cat"))) }
    }

    @Test func registryRefusesIdentifiersTheStoreRejectsBeforeOpening() throws {
        let registry = BlobURLRegistry()
        let folder = try AssetTemporaryFolder()
        registry.register(assetStore: try DirectoryAssetStore(directory: folder.path))
        for text in ["asset://?id=..", "asset://?id=..%2F..%2Fetc%2Fpasswd", "asset://?id=%252e%252e", "asset://?id=a%00b"] {
            let url = try #require(URL(string: text))
            #expect(performing: { try registry.dataSource(for: url) }, throws: { error in
                guard case .unsupportedURL(text, let reason)? = error as? BlobStreamError else { return false }
                return reason.contains("invalid asset identifier")
            })
        }
    }

    @Test func vanishedAssetThroughARegisteredSchemeIsNotFoundNamingTheURL() throws {
        let registry = BlobURLRegistry()
        registry.register(assetStore: MemoryAssetStore())
        let source = try registry.dataSource(for: try #require(URL(string: "asset://?id=gone")))
        #expect(openAndWait(source) == .failure(.notFound(resource: "asset://?id=gone")))
    }
}
