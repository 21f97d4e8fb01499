import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import Testing

/// Every upload protocol's failure names that protocol and the operation, never another one:
/// a case shared by tus, S3 and the streamed PUT (a broken or refused answer) carries which
/// request it concerns. (S3's answers used to read "the server broke the tus protocol".)
@Suite struct ProtocolNamingTests {
    /// Expects `text` to name every one of `names` and none of `others` as a word ("status"
    /// does not name tus).
    static func expect(_ text: String, names: [String], notNaming others: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        for name in names { #expect(text.contains(name), "\(text)", sourceLocation: sourceLocation) }
        for other in others {
            #expect(text.range(of: "\\b\(other)\\b", options: .regularExpression) == nil, "\(text)", sourceLocation: sourceLocation)
        }
    }

    /// Expects `error` to be a malformed answer to `operation`, at a URL `url` accepts, whose
    /// reason mentions `reason` and whose message names the operation and HTTP/1.1 and none of
    /// `others`.
    static func expectMalformed(
        _ error: BlobUploadError?, _ operation: UploadOperation, url accepts: (String) -> Bool, reason fragment: String,
        notNaming others: [String], sourceLocation: SourceLocation = #_sourceLocation
    ) {
        guard case .malformedAnswer(operation, let url, let reason)? = error else {
            Issue.record("\(String(describing: error))", sourceLocation: sourceLocation)
            return
        }
        #expect(accepts(url), "\(url)", sourceLocation: sourceLocation)
        #expect(reason.contains(fragment), "\(reason)", sourceLocation: sourceLocation)
        expect("\(error!)", names: ["\(operation) \(url)", "no valid HTTP/1.1"], notNaming: others, sourceLocation: sourceLocation)
    }

    /// An `UploadPart` answer whose body runs past 4 MiB is S3's broken answer, not tus's.
    @Test func anOversizeS3AnswerNamesS3AndUploadPart() async throws {
        let endless = "HTTP/1.1 200 OK\r\nETag: \"e\"\r\nContent-Length: 1073741824\r\n\r\n"
            + String(repeating: "x", count: S3Wire.maxKeptBody + 1)
        let server = try ScriptedHTTPServer(connections: [[S3ErrorTests.created], [endless]])
        let client = try S3ErrorTests.client(server)
        let error = await #expect(throws: S3Error.self) {
            _ = try await client.upload(S3ErrorTests.source(), key: "k", options: S3ErrorTests.multipart)
        }
        guard case .transfer(.protocolViolation(.s3(operation: "UploadPart"), let url, _))? = error else {
            Issue.record("\(String(describing: error))")
            return
        }
        #expect(url.contains("uploadId=UP-1"), "\(url)")
        Self.expect("\(error!)", names: ["S3 UploadPart", "S3 protocol", "longer than", url], notNaming: ["tus", "HTTP PUT"])
    }

    /// A redirect of `UploadPart` to another query (it would turn into a `PutObject`) is an
    /// S3 refusal naming the operation, the original request and where it pointed.
    @Test func anS3RedirectToAnotherQueryNamesS3AndTheOperation() async throws {
        let server = try ScriptedHTTPServer(connections: [
            [S3ErrorTests.created], [S3ErrorTests.answer("307 Temporary Redirect", fields: ["Location: /scripted-bucket/k"])],
        ])
        let client = try S3ErrorTests.client(server)
        let error = await #expect(throws: S3Error.self) {
            _ = try await client.upload(S3ErrorTests.source(), key: "k", options: S3ErrorTests.multipart)
        }
        guard case .transfer(.protocolViolation(.s3(operation: "UploadPart"), _, let reason))? = error else {
            Issue.record("\(String(describing: error))")
            return
        }
        #expect(reason.contains("partNumber=1&uploadId=UP-1"), "\(reason)")
        Self.expect("\(error!)", names: ["S3 UploadPart", "S3 protocol", "redirect", "/scripted-bucket/k"], notNaming: ["tus"])
    }

    /// An `UploadPart` that never gets an answer is S3's network failure, and says so.
    @Test func anS3NetworkFailureNamesS3() async throws {
        let server = try ScriptedHTTPServer(connections: [[S3ErrorTests.created]] + Array(repeating: [], count: 8))
        let error = await #expect(throws: S3Error.self) {
            _ = try await S3ErrorTests.client(server).upload(S3ErrorTests.source(), key: "k", options: S3ErrorTests.multipart)
        }
        guard case .retriesExhausted(_, _, "UP-1", 1, _, .transfer(.network("PUT", let url, _, _)))? = error else {
            Issue.record("\(String(describing: error))")
            return
        }
        Self.expect("\(error!)", names: ["last error: S3 PUT \(url): network error"], notNaming: ["tus"])
    }

    /// A redirect of a single `PutObject` to another key names `PutObject`.
    @Test func anS3RedirectToAnotherPathNamesPutObject() async throws {
        let server = try ScriptedHTTPServer(connections: [
            [S3ErrorTests.answer("307 Temporary Redirect", fields: ["Location: /elsewhere/k"])],
        ])
        let error = await #expect(throws: S3Error.self) {
            _ = try await S3ErrorTests.client(server).upload(S3ErrorTests.source(), key: "k")
        }
        Self.expect("\(String(describing: error))", names: ["S3 PutObject", "S3 protocol", "/elsewhere/k"], notNaming: ["tus"])
    }

    /// A tus server that confirms more than the PATCH carried broke tus, and the message says
    /// which tus request.
    @Test func aTusViolationNamesTusAndThePatch() async throws {
        let server = try ScriptedHTTPServer(connections: [[
            ScriptedTus.options, ScriptedTus.created("/files/1"), ScriptedTus.patched(5000),
        ]])
        let error = await #expect(throws: BlobUploadError.self) {
            _ = try await TusClient(endpoint: ScriptedTus.endpoint(server)).upload(
                ScriptedTus.source(1000), options: ScriptedTus.options(chunkSize: 1000))
        }
        guard case .protocolViolation(.tus(method: "PATCH"), let url, _)? = error else {
            Issue.record("\(String(describing: error))")
            return
        }
        Self.expect("\(error!)", names: ["tus PATCH \(url)", "tus protocol", "Upload-Offset 5000"], notNaming: ["S3"])
    }

    /// A tus PATCH answered with framing HTTP/1.1 cannot use (two lengths that differ) is a
    /// malformed answer to that PATCH: the message blames HTTP/1.1, not tus, which never got
    /// to judge it.
    @Test func aMalformedAnswerToATusPatchBlamesHTTPNotTus() async throws {
        let twoLengths = "HTTP/1.1 200 OK\r\nTus-Resumable: 1.0.0\r\nUpload-Offset: 1000\r\n"
            + "Content-Length: 0\r\nContent-Length: 5\r\n\r\n"
        let server = try ScriptedHTTPServer(connections: [[ScriptedTus.options, ScriptedTus.created("/files/1"), twoLengths]])
        let error = await #expect(throws: BlobUploadError.self) {
            _ = try await TusClient(endpoint: ScriptedTus.endpoint(server)).upload(
                ScriptedTus.source(1000), options: ScriptedTus.options(chunkSize: 1000))
        }
        Self.expectMalformed(error, .tus(method: "PATCH"), url: { $0.hasSuffix("/files/1") }, reason: "Content-Length", notNaming: ["tus protocol", "S3"])
    }

    /// A tus PATCH answered with a status line that is no HTTP/1.1 is a malformed answer on
    /// both transports alike (URLSession reports it as libcurl's words only).
    @Test(arguments: [Transport.automatic, .urlSession])
    func aMalformedStatusLineIsAMalformedAnswerOnBothTransports(transport: Transport) async throws {
        let broken = "HTTP/1.1 2x4 No Content\r\nTus-Resumable: 1.0.0\r\nUpload-Offset: 1000\r\nContent-Length: 0\r\n\r\n"
        let server = try ScriptedHTTPServer(connections: [[ScriptedTus.options, ScriptedTus.created("/files/1"), broken]])
        let error = await #expect(throws: BlobUploadError.self) {
            _ = try await TusClient(endpoint: ScriptedTus.endpoint(server), transport: transport).upload(
                ScriptedTus.source(1000), options: ScriptedTus.options(chunkSize: 1000))
        }
        let reason = transport == .urlSession ? "response code" : "malformed status line"
        Self.expectMalformed(error, .tus(method: "PATCH"), url: { $0.hasSuffix("/files/1") }, reason: reason, notNaming: ["tus protocol", "S3"])
        #expect(server.requests.filter { $0.hasPrefix("PATCH ") }.count == 1, "a malformed answer is not retried")
    }

    /// An S3 `UploadPart` answered with a malformed chunk names the S3 operation and blames
    /// HTTP/1.1, not S3.
    @Test func aMalformedAnswerToAnUploadPartBlamesHTTPNotS3() async throws {
        let badChunk = "HTTP/1.1 200 OK\r\nETag: \"e\"\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n"
        let server = try ScriptedHTTPServer(connections: [[S3ErrorTests.created], [badChunk]])
        let error = await #expect(throws: S3Error.self) {
            _ = try await S3ErrorTests.client(server).upload(S3ErrorTests.source(), key: "k", options: S3ErrorTests.multipart)
        }
        guard case .transfer(let failure)? = error else {
            Issue.record("\(String(describing: error))")
            return
        }
        Self.expectMalformed(failure, .s3(operation: "UploadPart"), url: { $0.contains("uploadId=UP-1") }, reason: "chunk", notNaming: ["S3 protocol", "tus"])
        #expect("\(error!)".contains("no valid HTTP/1.1"), "\(error!)")
    }

    /// A streamed PUT answered with something that is no HTTP/1.1 names the plain HTTP PUT,
    /// not tus.
    @Test func aBrokenAnswerToAStreamedPutNamesHTTPPut() async throws {
        // Answered once the whole body arrived: an answer before it would be an early one.
        let server = try ScriptedHTTPServer(connections: [["SMTP ready\r\n\r\n"]], drainBeforeClosing: true, readsChunkedBodies: true)
        let target = URL(string: "http://127.0.0.1:\(server.port)/upload/put.bin")!
        let error = await #expect(throws: BlobUploadError.self) {
            _ = try await StreamedUploader(transport: .automatic).upload(InputStream(data: Data("hello".utf8)), to: target)
        }
        Self.expectMalformed(error, .http(method: "PUT"), url: { $0 == target.absoluteString }, reason: "malformed status line", notNaming: ["tus", "S3"])
    }

    /// An S3 upload whose HTTP source (nginx) answers 404 says the source's GET failed, not S3.
    @Test func anHTTPSourceFailureInAnS3UploadNamesTheHTTPSource() async throws {
        let missing = TestServers.nginxURL.appendingPathComponent("no-such-blob-\(UUID().uuidString).bin")
        let server = try ScriptedHTTPServer(connections: [])
        let error = await #expect(throws: S3Error.self) {
            _ = try await S3ErrorTests.client(server).upload(try UploadSource.url(missing), key: "k")
        }
        guard case .transfer(.source(.httpStatus(missing.absoluteString, 404, _)))? = error else {
            Issue.record("\(String(describing: error))")
            return
        }
        Self.expect("\(error!)", names: ["HTTP source GET \(missing): HTTP 404 Not Found"], notNaming: ["S3", "tus"])
    }

    /// The command line says the same: an upload to tuspyserver from a missing nginx file is
    /// the HTTP source's 404, not the tus server's.
    @Test func anHTTPSourceFailureOfTheUploadCommandNamesTheHTTPSource() async throws {
        let missing = TestServers.nginxURL.appendingPathComponent("no-such-blob-\(UUID().uuidString).bin")
        let result = try await ToolProcess.execute(
            ToolProcess.blobstream(), ["upload", missing.absoluteString, TestServers.tusFilesURL.absoluteString])
        #expect(result.status == 1)
        Self.expect(result.standardError, names: ["HTTP source GET \(missing): HTTP 404 Not Found"], notNaming: ["tus", "S3"])
    }
}
