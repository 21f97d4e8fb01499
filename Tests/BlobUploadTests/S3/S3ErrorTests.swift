import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import Testing

/// S3's error answers, retries and redirects, from scripted servers (moto cannot be made to
/// throttle, fail or redirect).
@Suite struct S3ErrorTests {
    static let secret = "TOP-SECRET-never-printed"

    static func client(_ server: ScriptedHTTPServer) throws -> S3Client {
        try S3Client(configuration: S3Configuration(
            endpoint: URL(string: "http://127.0.0.1:\(server.port)")!, bucket: "scripted-bucket",
            credentials: S3Credentials(accessKeyID: "AKID", secretAccessKey: secret)))
    }

    static func answer(_ status: String, fields: [String] = [], body: String = "") -> String {
        (["HTTP/1.1 \(status)", "Content-Length: \(body.utf8.count)", "Connection: close"] + fields).joined(separator: "\r\n")
            + "\r\n\r\n" + body
    }

    static func error(_ status: String, code: String, message: String = "text") -> String {
        answer(status, fields: ["Content-Type: application/xml"], body: """
            <?xml version="1.0" encoding="UTF-8"?>
            <Error><Code>\(code)</Code><Message>\(message)</Message><RequestId>REQ-1</RequestId></Error>
            """)
    }

    static let created = answer("200 OK", body: "<InitiateMultipartUploadResult><Bucket>scripted-bucket</Bucket><Key>k</Key><UploadId>UP-1</UploadId></InitiateMultipartUploadResult>")
    static let partStored = answer("200 OK", fields: ["ETag: \"0123456789abcdef0123456789abcdef\""])
    static let completed = answer("200 OK", body: "<CompleteMultipartUploadResult><ETag>\"ffff-1\"</ETag></CompleteMultipartUploadResult>")

    static func source(_ count: Int = 1000) -> UploadSource {
        UploadSource.dataSource(name: "scripted", length: Int64(count)) { MemoryDataSource(data: Data(repeating: 7, count: count)) }
    }

    /// One part of 1,000 bytes (the last part may be smaller than 5 MiB), retried quickly.
    static var multipart: S3UploadOptions {
        var options = S3UploadOptions()
        options.singlePutThreshold = 0
        options.retryDelay = 0.01
        return options
    }

    @Test func signatureMismatchIsTypedNamesTheRequestAndSaysWhatToCheck() async throws {
        let server = try ScriptedHTTPServer(connections: [[Self.error("403 Forbidden", code: "SignatureDoesNotMatch",
                                                                        message: "The request signature we calculated does not match")]])
        let client = try Self.client(server)
        let error = await #expect(throws: S3Error.self) { _ = try await client.upload(Self.source(), key: "a/k") }
        guard case .service(let failure)? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(failure == S3ServiceError(
            operation: "PutObject", statusCode: 403, code: "SignatureDoesNotMatch",
            message: "The request signature we calculated does not match", requestID: "REQ-1", bucket: "scripted-bucket", key: "a/k"))
        #expect("\(failure)".contains("AWS_SECRET_ACCESS_KEY"))
        #expect(!"\(failure)".contains(Self.secret))
        #expect(!server.requests.joined().contains(Self.secret))
    }

    /// An answer that is not S3's XML (a proxy's page, a store's text) shows one line of a
    /// text body, and nothing of an HTML page that only repeats the status.
    @Test(arguments: [
        ("text/plain", "storage node offline\nretry later", "storage node offline" as String?),
        ("text/html", "<!DOCTYPE HTML>\n<html><head><title>501 Not Implemented</title></head><body>x</body></html>", nil),
    ])
    func aBodyThatIsNotS3sXMLShowsOneLine(type: String, body: String, message: String?) async throws {
        let server = try ScriptedHTTPServer(connections: [[Self.answer("501 Not Implemented", fields: ["Content-Type: \(type)"], body: body)]])
        let client = try Self.client(server)
        let error = await #expect(throws: S3Error.self) { _ = try await client.upload(Self.source(), key: "k") }
        guard case .service(let failure)? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(failure.message == message)
        #expect(!"\(failure)".contains("DOCTYPE"), "\(failure)")
    }

    @Test func clockSkewSaysToCheckTheClock() async throws {
        let server = try ScriptedHTTPServer(connections: [[Self.error("403 Forbidden", code: "RequestTimeTooSkewed")]])
        let client = try Self.client(server)
        let error = await #expect(throws: S3Error.self) { _ = try await client.upload(Self.source(), key: "k") }
        #expect(error.map { "\($0)" }?.contains("clock") == true)
    }

    @Test func slowDownAndDroppedConnectionsAreRetriedForThePart() async throws {
        let server = try ScriptedHTTPServer(connections: [
            [Self.created],
            [Self.error("503 Slow Down", code: "SlowDown")],
            [],   // closed without an answer
            [Self.partStored],
            [Self.completed],
        ])
        let client = try Self.client(server)
        let log = EventLog<S3UploadEvent>()
        let result = try await client.upload(Self.source(), key: "k", options: Self.multipart) { log.append($0) }
        #expect(result.eTag == "\"ffff-1\"")
        let retries = log.all.compactMap { if case .retrying(let part, let attempt, _, _) = $0 { "\(part ?? 0)/\(attempt)" } else { nil } }
        #expect(retries == ["1/2", "1/3"])
        // The dropped connection was closed before its request was read: two are logged.
        #expect(server.requests.filter { $0.hasPrefix("PUT /scripted-bucket/k?partNumber=1&uploadId=UP-1 ") }.count == 2)
        #expect(server.connectionCount == 5)
    }

    @Test func retriesAreBounded() async throws {
        let server = try ScriptedHTTPServer(connections: [[Self.created]] + Array(repeating: [Self.error("500 Internal Server Error", code: "InternalError")], count: 3))
        let client = try Self.client(server)
        var options = Self.multipart
        options.maxAttempts = 3
        await #expect(throws: S3Error.retriesExhausted(
            bucket: "scripted-bucket", key: "k", uploadID: "UP-1", partNumber: 1, attempts: 3,
            lastError: .service(S3ServiceError(operation: "UploadPart", statusCode: 500, code: "InternalError", message: "text",
                                               requestID: "REQ-1", bucket: "scripted-bucket", key: "k", uploadID: "UP-1", partNumber: 1)))) {
            _ = try await client.upload(Self.source(), key: "k", options: options)
        }
    }

    @Test func noSuchUploadMeansTheUploadIsGone() async throws {
        let server = try ScriptedHTTPServer(connections: [[Self.created], [Self.error("404 Not Found", code: "NoSuchUpload")]])
        let client = try Self.client(server)
        await #expect(throws: S3Error.uploadGone(bucket: "scripted-bucket", key: "k", uploadID: "UP-1")) {
            _ = try await client.upload(Self.source(), key: "k", options: Self.multipart)
        }
    }

    /// The object that `completed` would have made of one part with `partStored`'s ETag: its
    /// ETag is the MD5 of the parts' MD5s (computed with Python's hashlib), then `-1`.
    static func headOfCompletedObject(eTag: String = "\"4662bdea8654776d486072ff7074945e-1\"", length: Int = 1000) -> String {
        (["HTTP/1.1 200 OK", "Content-Length: \(length)", "ETag: \(eTag)", "Connection: close"]).joined(separator: "\r\n") + "\r\n\r\n"
    }

    @Test func aCompleteWhoseAnswerWasLostIsConfirmedByTheObjectsETag() async throws {
        // The first Complete's connection drops without an answer, as if S3 completed the
        // upload and the answer was lost; the retry then finds the upload gone.
        let server = try ScriptedHTTPServer(connections: [
            [Self.created], [Self.partStored], [], [Self.error("404 Not Found", code: "NoSuchUpload")], [Self.headOfCompletedObject()],
        ])
        let client = try Self.client(server)
        let result = try await client.upload(Self.source(), key: "k", options: Self.multipart)
        #expect(result.eTag == "\"4662bdea8654776d486072ff7074945e-1\"")
        #expect(result.length == 1000)
        #expect(server.requests.last?.hasPrefix("HEAD /scripted-bucket/k ") == true)
    }

    /// An answer that keeps its connection open for the next request.
    static func keptAlive(_ status: String, fields: [String] = [], body: String = "") -> String {
        (["HTTP/1.1 \(status)", "Content-Length: \(body.utf8.count)"] + fields).joined(separator: "\r\n") + "\r\n\r\n" + body
    }

    @Test func aCompleteLostOnAKeptAliveConnectionIsConfirmedByTheObjectsETag() async throws {
        // The Complete goes out on the part's kept-alive connection, which closes without an
        // answer; sent again at once on a new one, it finds the upload gone: the same attempt.
        let server = try ScriptedHTTPServer(connections: [
            [Self.created], [Self.keptAlive("200 OK", fields: ["ETag: \"0123456789abcdef0123456789abcdef\""]), ""],
            [Self.error("404 Not Found", code: "NoSuchUpload")], [Self.headOfCompletedObject()],
        ])
        let client = try Self.client(server)
        let result = try await client.upload(Self.source(), key: "k", options: Self.multipart)
        #expect(result.eTag == "\"4662bdea8654776d486072ff7074945e-1\"")
        #expect(server.requests.last?.hasPrefix("HEAD /scripted-bucket/k ") == true)
    }

    @Test func theObjectCheckAfterALostCompleteIsRetriedOn503() async throws {
        let server = try ScriptedHTTPServer(connections: [
            [Self.created], [Self.partStored], [], [Self.error("404 Not Found", code: "NoSuchUpload")],
            [Self.answer("503 Slow Down")], [Self.headOfCompletedObject()],
        ])
        let result = try await Self.client(server).upload(Self.source(), key: "k", options: Self.multipart)
        #expect(result.eTag == "\"4662bdea8654776d486072ff7074945e-1\"")
    }

    @Test(arguments: [("\"4662bdea8654776d486072ff7074945f-1\"", 1000), ("\"4662bdea8654776d486072ff7074945e-1\"", 999)])
    func aGoneUploadWhoseObjectIsAnotherStaysGone(eTag: String, length: Int) async throws {
        let server = try ScriptedHTTPServer(connections: [
            [Self.created], [Self.partStored], [], [Self.error("404 Not Found", code: "NoSuchUpload")],
            [Self.headOfCompletedObject(eTag: eTag, length: length)],
        ])
        let client = try Self.client(server)
        await #expect(throws: S3Error.uploadGone(bucket: "scripted-bucket", key: "k", uploadID: "UP-1")) {
            _ = try await client.upload(Self.source(), key: "k", options: Self.multipart)
        }
    }

    @Test func anErrorInsideA200CompleteAnswerIsAnError() async throws {
        let server = try ScriptedHTTPServer(connections: [[Self.created], [Self.partStored],
                                                          [Self.error("200 OK", code: "InvalidPart", message: "part 1 is missing")]])
        let client = try Self.client(server)
        let error = await #expect(throws: S3Error.self) { _ = try await client.upload(Self.source(), key: "k", options: Self.multipart) }
        guard case .service(let failure)? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(failure.code == "InvalidPart")
        #expect(failure.operation == "CompleteMultipartUpload")
        #expect(failure.uploadID == "UP-1")
    }

    @Test func aRedirectToAnotherHostIsRefusedAndNothingIsSentThere() async throws {
        let elsewhere = try ScriptedHTTPServer(connections: [[Self.partStored]], address: .random())
        let target = elsewhere.url("/scripted-bucket/k").absoluteString
        let server = try ScriptedHTTPServer(connections: [[Self.answer("307 Temporary Redirect", fields: ["Location: \(target)"])]])
        let client = try Self.client(server)
        await #expect(throws: S3Error.transfer(.crossOriginRefused(
            method: "PUT", url: target, allowedOrigin: "http://127.0.0.1:\(server.port)"))) {
            _ = try await client.upload(Self.source(), key: "k")
        }
        elsewhere.stop()
        #expect(!elsewhere.wasReached)
    }

    /// A redirect within the origin to another object is refused, naming its target: following
    /// it would store the blob under another key or bucket and report it done. (This test
    /// used to expect it to be followed, which was the defect.)
    @Test func aRedirectWithinTheOriginToAnotherKeyIsRefused() async throws {
        let server = try ScriptedHTTPServer(connections: [
            [Self.answer("307 Temporary Redirect", fields: ["Location: /elsewhere/k"])],
            [Self.answer("200 OK", fields: ["ETag: \"e\""])],
        ])
        let client = try Self.client(server)
        let error = await #expect(throws: S3Error.self) { _ = try await client.upload(Self.source(), key: "k") }
        guard case .transfer(.protocolViolation(_, let url, let reason))? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(url == "http://127.0.0.1:\(server.port)/elsewhere/k")
        #expect(reason.contains("redirect"), "\(reason)")
        #expect(server.requests.count == 1)
    }

    /// A redirect of UploadPart that drops `?partNumber&uploadId` would make it a PutObject
    /// overwriting the object with one part: refused.
    @Test func aRedirectDroppingTheUploadPartQueryIsRefused() async throws {
        let server = try ScriptedHTTPServer(connections: [
            [Self.created], [Self.answer("307 Temporary Redirect", fields: ["Location: /scripted-bucket/k"])],
            [Self.partStored], [Self.completed],
        ])
        let client = try Self.client(server)
        let error = await #expect(throws: S3Error.self) { _ = try await client.upload(Self.source(), key: "k", options: Self.multipart) }
        guard case .transfer(.protocolViolation(_, let url, _))? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(url == "http://127.0.0.1:\(server.port)/scripted-bucket/k")
        #expect(!server.requests.contains { $0.hasPrefix("PUT /scripted-bucket/k HTTP/1.1") })
    }

    @Test func aPartChecksumTheServerComputedDifferentlyFailsTheUpload() async throws {
        let server = try ScriptedHTTPServer(connections: [[Self.created],
            [Self.answer("200 OK", fields: ["ETag: \"aa\"", "x-amz-checksum-crc32c: AAAAAA=="])]])
        let client = try Self.client(server)
        let error = await #expect(throws: S3Error.self) { _ = try await client.upload(Self.source(), key: "k", options: Self.multipart) }
        guard case .protocolViolation(_, _, "UploadPart", let reason)? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(reason.contains("AAAAAA=="))
    }

    @Test func aSourceThatChangesMidUploadFailsAndIsNeverCompleted() async throws {
        let server = try ScriptedHTTPServer(connections: [[Self.created], [Self.partStored], [Self.completed]])
        let client = try Self.client(server)
        let calls = Locked(0)
        // The first stream learns the length (and pins version v1); the parts' streams find v2.
        let source = UploadSource.dataSource(name: "changing") {
            let source = ScriptedDataSource(bytes: [UInt8](repeating: 1, count: 1000))
            if calls.mutate({ $0 += 1; return $0 }) > 2 { source.replace(with: [UInt8](repeating: 2, count: 1000)) }
            return source
        }
        let error = await #expect(throws: S3Error.self) { _ = try await client.upload(source, key: "k", options: Self.multipart) }
        guard case .transfer(.source(.sourceChanged))? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(!server.requests.contains { $0.hasPrefix("POST /scripted-bucket/k?uploadId=") })
        #expect(!server.requests.contains { $0.hasPrefix("PUT ") })
    }

    /// `https:` is the package's own client's too (S3 over TLS is tested against moto behind
    /// nginx); any other scheme is refused with a typed error before anything is sent.
    @Test func endpointsOtherThanHTTPAndHTTPSAreRefusedWithATypedError() throws {
        _ = try S3Client(configuration: S3Configuration(
            endpoint: URL(string: "https://s3.amazonaws.com")!, bucket: "bucket", credentials: MotoS3.credentials))
        for endpoint in ["ftp://s3.amazonaws.com", "file:///tmp/s3"] {
            let error = #expect(throws: S3Error.self) {
                _ = try S3Client(configuration: S3Configuration(endpoint: URL(string: endpoint)!, bucket: "bucket", credentials: MotoS3.credentials))
            }
            guard case .unsupportedEndpoint(let named, let reason)? = error else {
                Issue.record("\(String(describing: error))")
                continue
            }
            #expect(named == endpoint)
            #expect(reason.contains("not an http or https URL"), "\(reason)")
        }
    }

    /// A one-pass stream that ends early fails with its own error, never with the `cancelled`
    /// of the workers that were waiting for their turn to read it (repeated: it is a race).
    @Test func aShortOnePassStreamFailsWithItsErrorNotWithCancelled() async throws {
        var options = Self.multipart
        options.partSize = 5 << 20
        options.parallelParts = 64
        for _ in 0..<40 {
            let server = try ScriptedHTTPServer(connections: [[Self.created]])
            let client = try Self.client(server)
            let source = UploadSource.streams(name: "short", length: 320 << 20) { InputStream(data: Data(count: 1000)) }
            let error = await #expect(throws: S3Error.self) { _ = try await client.upload(source, key: "k", options: options) }
            guard case .transfer(.source(.unexpectedEnd(resource: "short", offset: 1000, _)))? = error else {
                Issue.record("\(String(describing: error))")
                return
            }
        }
    }
}
