import BlobStream
import BlobTestSupport
import BlobUpload
import Foundation
import Testing

/// An upload made from a source that names no version (an HTTP server that sends neither `ETag`
/// nor `Last-Modified`) cannot be continued: nothing could confirm that the source still has
/// the bytes sent. It used to be continued by length and filename alone, and a blob rewritten
/// in between left the server a mix of two versions, reported as a success.
@Suite struct TusUnversionedSourceTests {
    static let length = 300_000

    /// A blob with no validators: all "A" for the first request, all "B" after (rewritten in
    /// place, same length).
    static func rewrittenBlob() throws -> ScriptedHTTPServer {
        let count = LockedCounter()
        return try ScriptedHTTPServer { request in
            let byte = count.next() == 0 ? UInt8(ascii: "A") : UInt8(ascii: "B")
            let first = request.fields["range"].flatMap { Int($0.dropFirst("bytes=".count).prefix { $0 != "-" }) } ?? 0
            if first >= Self.length {
                return Array("HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */\(Self.length)\r\nContent-Length: 0\r\n\r\n".utf8)
            }
            let head = "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes \(first)-\(Self.length - 1)/\(Self.length)\r\n"
                + "Content-Length: \(Self.length - first)\r\nConnection: close\r\n\r\n"
            return Array(head.utf8) + [UInt8](repeating: byte, count: Self.length - first)
        }
    }

    final class LockedCounter: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0
        func next() -> Int { lock.withLock { value += 1; return value - 1 } }
    }

    @Test func anUploadFromASourceWithoutAVersionIsAnnouncedAndNotContinued() async throws {
        try TestServers.requireTus()
        let server = try Self.rewrittenBlob()
        defer { server.stop() }
        let blob = URL(string: "http://127.0.0.1:\(server.port)/blob")!
        let client = TusClient(endpoint: TestServers.tusFilesURL)
        var options = TusUploadOptions()
        options.chunkSize = 64 * 1024
        let events = Locked<[TusUploadEvent]>([])
        let result = try await client.upload(try UploadSource.url(blob), options: options) { event in
            events.value.append(event)
        }
        defer { TestServers.removeUploads([result.uploadURL]) }
        #expect(events.value.contains { if case .unversioned(blob.absoluteString) = $0 { true } else { false } })

        let source = try UploadSource.url(blob)
        let outcome: Result<TusUploadResult, BlobUploadError>
        do throws(BlobUploadError) {
            outcome = .success(try await client.upload(source, resuming: result.uploadURL, options: options))
        } catch {
            outcome = .failure(error)
        }
        guard case .failure(.source(.sourceChanged(let resource, _, let reason))) = outcome else {
            Issue.record("an upload from a source without a version was continued, or failed otherwise: \(outcome)")
            return
        }
        #expect(resource == blob.absoluteString)
        #expect(reason.contains("names no version"), "\(reason)")
        #expect(try await client.status(of: result.uploadURL).offset == Int64(Self.length))
    }

    /// The command line warns when such an upload starts, and never offers `--resume` for it;
    /// following `--resume` anyway is refused, so the server never holds a mix of the two
    /// versions reported as complete.
    @Test func theCommandLineWarnsAndNeverOffersToResume() async throws {
        try TestServers.requireTus()
        let server = try Self.rewrittenBlob()
        defer { server.stop() }
        let blob = "http://127.0.0.1:\(server.port)/blob"
        let first = try await ToolProcess.execute(
            ToolProcess.blobstream(), ["upload", "--chunk-size", "64K", blob, TestServers.tusFilesURL.absoluteString])
        #expect(first.status == 0, "\(first.standardError)")
        #expect(first.standardError.contains("warning: \(blob) names no version"), "\(first.standardError)")
        let created = try #require(first.standardOutput.split(separator: "\n").last.map(String.init))
        TestServers.removeUploads([URL(string: created)!])

        // An upload stopped after its first 64 KiB of "A", continued after the blob became "B".
        let client = TusClient(endpoint: TestServers.tusFilesURL)
        let partial = try await client.create(
            length: Int64(Self.length), metadata: ["filename": "blob", "filetype": "application/octet-stream"])
        defer { TestServers.removeUploads([partial]) }
        #expect(try await sendRawPatch(Data(repeating: UInt8(ascii: "A"), count: 65_536), at: 0, to: partial) == 204)
        let uploadURL = partial.absoluteString
        let resumed = try await ToolProcess.execute(
            ToolProcess.blobstream(), ["upload", "--resume", uploadURL, blob, TestServers.tusFilesURL.absoluteString])
        #expect(resumed.status == 1, "\(resumed.standardError)")
        #expect(resumed.standardError.contains("names no version"), "\(resumed.standardError)")
        #expect(resumed.standardError.contains("start a new upload"), "\(resumed.standardError)")
        #expect(!resumed.standardError.contains("continue with --resume"), "\(resumed.standardError)")
        #expect(try await client.status(of: partial).offset == 65_536, "nothing of the other version was sent")
    }
}
