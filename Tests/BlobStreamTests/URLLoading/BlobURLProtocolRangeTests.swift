@testable import BlobStream
import BlobTestSupport
import Foundation
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The HTTP face of ``BlobURLProtocol``: headers, ranges, `HEAD`, on an asset of 3 MiB + 5
/// (several 1 MiB asset blocks) read through a real URLSession.
@Suite struct BlobURLProtocolRangeTests {
    static let size = 3 * 1024 * 1024 + 5

    private func load(
        _ range: String?, method: String = "GET", ifRange: String? = nil
    ) async throws -> (data: Data, response: HTTPURLResponse, bytes: Data, fixture: URLAssetFixture) {
        let fixture = try URLAssetFixture()
        // The caller removes the fixture once this returned; until then, a throw removes it.
        do {
            let path = try fixture.add("clip.bin", size: Self.size, seed: 3)
            var request = URLRequest(url: fixture.url("clip.bin"))
            request.httpMethod = method
            if let range { request.setValue(range, forHTTPHeaderField: "Range") }
            if let ifRange { request.setValue(ifRange, forHTTPHeaderField: "If-Range") }
            let (data, response, error) = await URLLoading.completionTask(URLLoading.session(), request)
            if let error { throw error }
            let http = try #require(response as? HTTPURLResponse)
            return (data ?? Data(), http, try Data(contentsOf: URL(fileURLWithPath: path)), fixture)
        } catch {
            fixture.remove()
            throw error
        }
    }

    @Test func wholeBlobHasLengthEntityTagAndAcceptRanges() async throws {
        let result = try await load(nil)
        defer { result.fixture.remove() }
        #expect(result.response.statusCode == 200)
        #expect(result.response.value(forHTTPHeaderField: "Content-Length") == String(Self.size))
        #expect(result.response.value(forHTTPHeaderField: "Accept-Ranges") == "bytes")
        let tag = try #require(result.response.value(forHTTPHeaderField: "ETag"))
        #expect(tag.hasPrefix("\"") && tag.hasSuffix("\"") && tag.count > 2)
        #expect(result.response.value(forHTTPHeaderField: "Cache-Control") == "no-store")
        #expect(result.data == result.bytes)
    }

    @Test(arguments: [
        ("bytes=0-0", 0, 0),
        ("bytes=\(size - 1)-\(size - 1)", size - 1, size - 1),
        ("bytes=1048570-2097160", 1_048_570, 2_097_160),
        ("bytes=3000000-", 3_000_000, size - 1),
        ("bytes=-10", size - 10, size - 1),
        ("bytes=-99999999", 0, size - 1),
        ("bytes=5-99999999", 5, size - 1),
    ])
    func rangeGetsPartialContent(range: String, first: Int, last: Int) async throws {
        let result = try await load(range)
        defer { result.fixture.remove() }
        #expect(result.response.statusCode == 206)
        #expect(result.response.value(forHTTPHeaderField: "Content-Range") == "bytes \(first)-\(last)/\(Self.size)")
        #expect(result.response.value(forHTTPHeaderField: "Content-Length") == String(last - first + 1))
        #expect(result.data == result.bytes[first...last])
    }

    @Test(arguments: ["bytes=\(size)-", "bytes=\(size + 100)-\(size + 200)", "bytes=-0", "bytes=99999999999999999999-"])
    func unsatisfiableRangeGets416(range: String) async throws {
        let result = try await load(range)
        defer { result.fixture.remove() }
        #expect(result.response.statusCode == 416)
        #expect(result.response.value(forHTTPHeaderField: "Content-Range") == "bytes */\(Self.size)")
        #expect(result.data.isEmpty)
    }

    @Test(arguments: ["items=0-5", "bytes=0-1,5-6", "bytes=abc", "bytes=9-3"])
    func rangeThisProtocolDoesNotServeGetsTheWholeBlob(range: String) async throws {
        let result = try await load(range)
        defer { result.fixture.remove() }
        #expect(result.response.statusCode == 200)
        #expect(result.data == result.bytes)
    }

    @Test func headGetsTheHeadWithoutTheBody() async throws {
        let result = try await load(nil, method: "HEAD")
        defer { result.fixture.remove() }
        #expect(result.response.statusCode == 200)
        #expect(result.response.value(forHTTPHeaderField: "Content-Length") == String(Self.size))
        #expect(result.data.isEmpty)
    }

    @Test func ifRangeWithAnotherEntityTagGetsTheWholeBlob() async throws {
        let result = try await load("bytes=10-20", ifRange: "\"another-version\"")
        defer { result.fixture.remove() }
        #expect(result.response.statusCode == 200)
        #expect(result.data == result.bytes)
    }

    @Test func ifRangeWithTheEntityTagGetsTheRange() async throws {
        let first = try await load(nil, method: "HEAD")
        defer { first.fixture.remove() }
        let tag = try #require(first.response.value(forHTTPHeaderField: "ETag"))
        var request = URLRequest(url: first.fixture.url("clip.bin"))
        request.setValue("bytes=10-20", forHTTPHeaderField: "Range")
        request.setValue(tag, forHTTPHeaderField: "If-Range")
        let (data, response) = try await URLLoading.session().data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 206)
        #expect(try data == Data(contentsOf: URL(fileURLWithPath: first.fixture.store.path(of: "clip.bin")))[10...20])
    }

    /// A delegate task streams a range block by block and stops at its last byte.
    @Test func delegateTaskGetsExactlyTheRange() async throws {
        let fixture = try URLAssetFixture()
        defer { fixture.remove() }
        let path = try fixture.add("clip.bin", size: Self.size, seed: 3)
        var request = URLRequest(url: fixture.url("clip.bin"))
        request.setValue("bytes=1000-2500000", forHTTPHeaderField: "Range")
        let delegate = RecordingDataDelegate()
        URLLoading.session(delegate: delegate).dataTask(with: request).resume()
        let outcome = await delegate.completion()
        #expect(outcome.error == nil)
        #expect(outcome.response?.statusCode == 206)
        #expect(outcome.chunkCount > 1)
        #expect(try outcome.bytes == Data(contentsOf: URL(fileURLWithPath: path))[1000...2_500_000])
    }

    @Test func emptyBlobIsAnEmptyBodyAndAnyRangeIsUnsatisfiable() async throws {
        let scheme = URLLoading.uniqueScheme("empty")
        BlobURLRegistry.shared.register(scheme: scheme) { url in GeneratedDataSource(url: url, length: 0) }
        defer { BlobURLRegistry.shared.unregister(scheme: scheme) }
        let url = URL(string: "\(scheme)://nothing")!
        let (data, response) = try await URLLoading.session().data(from: url)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        #expect((response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Content-Length") == "0")
        #expect(data.isEmpty)
        var request = URLRequest(url: url)
        request.setValue("bytes=0-", forHTTPHeaderField: "Range")
        let (_, ranged) = try await URLLoading.session().data(for: request)
        #expect((ranged as? HTTPURLResponse)?.statusCode == 416)
    }

    @Test func entityTagOfAnyVersionIsAValidHeaderValue() {
        #expect(BlobResponsePlan.entityTag(for: "123:456") == "\"123:456\"")
        let odd = BlobResponsePlan.entityTag(for: "a \"quoted\"\nline")
        #expect(odd?.hasPrefix("\"fnv-") == true)
        #expect(odd == BlobResponsePlan.entityTag(for: "a \"quoted\"\nline"))
        #expect(BlobResponsePlan.entityTag(for: nil) == nil)
    }
    /// Range numbers past `Int64` are still a range (RFC 9110 puts no bound on them): a first
    /// byte past the end is unsatisfiable and a last byte past it is clamped, not a malformed
    /// header answered with the whole blob.
    @Test func rangeNumbersPastInt64AreResolvedNotIgnored() {
        let description = BlobSourceDescription(length: 10, version: "v1")
        func plan(_ range: String) -> BlobResponsePlan {
            var request = URLRequest(url: URL(string: "x-test://blob")!)
            request.setValue(range, forHTTPHeaderField: "Range")
            return BlobResponsePlan(request: request, description: description)
        }
        let pastEnd = plan("bytes=99999999999999999999-")
        #expect(pastEnd.statusCode == 416)
        #expect(pastEnd.headerFields["Content-Range"] == "bytes */10")
        let clamped = plan("bytes=0-99999999999999999999")
        #expect(clamped.statusCode == 206)
        #expect(clamped.headerFields["Content-Range"] == "bytes 0-9/10")
        #expect(clamped.count == 10)
        let hugeSuffix = plan("bytes=-99999999999999999999")
        #expect(hugeSuffix.statusCode == 206)
        #expect(hugeSuffix.headerFields["Content-Range"] == "bytes 0-9/10")
    }

    /// `bytes */*` is not valid `Content-Range` syntax: a 416 for a blob of unknown length has
    /// no `Content-Range` at all.
    @Test func unsatisfiableRangeOfUnknownLengthHasNoContentRange() {
        #expect(BlobResponsePlan.unsatisfiable(length: nil).statusCode == 416)
        #expect(BlobResponsePlan.unsatisfiable(length: nil).headerFields["Content-Range"] == nil)
        #expect(BlobResponsePlan.unsatisfiable(length: 10).headerFields["Content-Range"] == "bytes */10")
    }
}
