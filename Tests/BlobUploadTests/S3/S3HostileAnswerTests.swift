import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import Testing

/// Answers no honest S3 gives, from scripted servers: endless bodies, CDATA and empty ETags,
/// early successes, composite ETags of another part count. None is reported as success.
@Suite struct S3HostileAnswerTests {
    /// An answer whose body goes on past what an S3 answer can be (an endless body) fails the
    /// request instead of keeping the worker reading; the connection is not reused.
    @Test func anAnswerBodyPastTheBoundFailsTheRequest() async throws {
        let endless = "HTTP/1.1 200 OK\r\nETag: \"e\"\r\nContent-Length: 1073741824\r\n\r\n"
            + String(repeating: "x", count: S3Wire.maxKeptBody + 1)
        let server = try ScriptedHTTPServer(connections: [[S3ErrorTests.created], [endless]])
        let client = try S3ErrorTests.client(server)
        let error = await #expect(throws: S3Error.self) { _ = try await client.upload(S3ErrorTests.source(), key: "k", options: S3ErrorTests.multipart) }
        guard case .transfer(.protocolViolation(_, _, let reason))? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(reason.contains("longer than"), "\(reason)")
    }

    /// An ETag sent as CDATA is read; an empty one is no ETag.
    @Test func aCDATAETagIsReadAndAnEmptyOneRefused() async throws {
        let cdata = S3ErrorTests.answer("200 OK", body: "<CompleteMultipartUploadResult><ETag><![CDATA[\"ffff-1\"]]></ETag></CompleteMultipartUploadResult>")
        let server = try ScriptedHTTPServer(connections: [[S3ErrorTests.created], [S3ErrorTests.partStored], [cdata]])
        let result = try await S3ErrorTests.client(server).upload(S3ErrorTests.source(), key: "k", options: S3ErrorTests.multipart)
        #expect(result.eTag == "\"ffff-1\"")
        let empty = S3ErrorTests.answer("200 OK", body: "<CompleteMultipartUploadResult><ETag></ETag></CompleteMultipartUploadResult>")
        let second = try ScriptedHTTPServer(connections: [[S3ErrorTests.created], [S3ErrorTests.partStored], [empty]])
        await #expect(throws: S3Error.protocolViolation(
            bucket: "scripted-bucket", key: "k", operation: "CompleteMultipartUpload", reason: "the answer names no ETag")) {
            _ = try await S3ErrorTests.client(second).upload(S3ErrorTests.source(), key: "k", options: S3ErrorTests.multipart)
        }
    }

    /// S3 keeps a slow `CompleteMultipartUpload` alive with whitespace after its 200, which
    /// some servers send before the XML declaration: the answer is still read, and an
    /// `<Error>` behind it is still the error.
    @Test func whitespaceBeforeTheCompleteAnswerIsSkipped() async throws {
        let keptAlive = S3ErrorTests.answer(
            "200 OK", body: "  \n \r\n<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<CompleteMultipartUploadResult><ETag>\"ffff-1\"</ETag></CompleteMultipartUploadResult>")
        let server = try ScriptedHTTPServer(connections: [[S3ErrorTests.created], [S3ErrorTests.partStored], [keptAlive]])
        let result = try await S3ErrorTests.client(server).upload(S3ErrorTests.source(), key: "k", options: S3ErrorTests.multipart)
        #expect(result.eTag == "\"ffff-1\"")

        let failed = S3ErrorTests.answer(
            "200 OK", body: "   \n<?xml version=\"1.0\"?><Error><Code>AccessDenied</Code><Message>no</Message></Error>")
        let second = try ScriptedHTTPServer(connections: [[S3ErrorTests.created], [S3ErrorTests.partStored], [failed]])
        let error = await #expect(throws: S3Error.self) {
            _ = try await S3ErrorTests.client(second).upload(S3ErrorTests.source(), key: "k", options: S3ErrorTests.multipart)
        }
        #expect("\(String(describing: error))".contains("AccessDenied"), "\(String(describing: error))")
    }

    /// A 200 sent before the body was read, by a server that then stopped reading, does not
    /// store a body that was not all sent: it is no success.
    @Test func anEarly200BeforeTheBodyWasSentIsNoSuccess() async throws {
        let server = try ScriptedHTTPServer(connections: [[S3ErrorTests.partStored]], readsBodies: false)
        var options = S3UploadOptions()
        options.maxAttempts = 1
        await #expect(throws: S3Error.self) {
            _ = try await S3ErrorTests.client(server).upload(S3ErrorTests.source(8 << 20), key: "k", options: options)
        }
    }

    /// A multipart ETag ends in `-` and the part count: one naming another count is not the
    /// object these parts make.
    @Test func aCompleteETagOfAnotherPartCountIsRefused() async throws {
        let other = S3ErrorTests.answer("200 OK", body: "<CompleteMultipartUploadResult><ETag>\"ffff-2\"</ETag></CompleteMultipartUploadResult>")
        let server = try ScriptedHTTPServer(connections: [[S3ErrorTests.created], [S3ErrorTests.partStored], [other]])
        let error = await #expect(throws: S3Error.self) {
            _ = try await S3ErrorTests.client(server).upload(S3ErrorTests.source(), key: "k", options: S3ErrorTests.multipart)
        }
        guard case .protocolViolation(_, _, "CompleteMultipartUpload", let reason)? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(reason.contains("\"ffff-2\""), "\(reason)")
    }

    /// A host that does not resolve is a wrong endpoint, not a passing failure: it fails at once
    /// rather than after every retry, as tus treats it.
    @Test func anEndpointWhoseHostDoesNotResolveFailsAtOnce() async throws {
        let client = try S3Client(configuration: S3Configuration(
            endpoint: URL(string: "http://no-such-host.invalid:9000")!, bucket: "scripted-bucket",
            credentials: S3Credentials(accessKeyID: "AKID", secretAccessKey: "secret")))
        var options = S3ErrorTests.multipart
        options.retryDelay = 5
        let error = await #expect(throws: S3Error.self) {
            _ = try await client.upload(S3ErrorTests.source(), key: "k", options: options)
        }
        guard case .transfer(.network(_, _, _, let code))? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(code == URLError.Code.cannotFindHost.rawValue)
    }

    /// 429 Too Many Requests is throttling, retried like SlowDown.
    @Test func tooManyRequestsIsRetried() async throws {
        let server = try ScriptedHTTPServer(connections: [
            [S3ErrorTests.created], [S3ErrorTests.answer("429 Too Many Requests")], [S3ErrorTests.partStored], [S3ErrorTests.completed],
        ])
        let result = try await S3ErrorTests.client(server).upload(S3ErrorTests.source(), key: "k", options: S3ErrorTests.multipart)
        #expect(result.eTag == "\"ffff-1\"")
    }
}
