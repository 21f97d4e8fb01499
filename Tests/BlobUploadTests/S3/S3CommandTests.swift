import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import Testing

/// `blobstream s3 cp` and `blobstream s3 abort`, run as child processes against moto.
@Suite struct S3CommandTests {
    static let environment = ["AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "cli-secret-never-printed", "AWS_ENDPOINT_URL": ""]

    static func blobstream(_ arguments: [String]) throws -> ToolProcess.Result {
        try ToolProcess.run(try ToolProcess.blobstream(), arguments, environment: environment)
    }

    @Test func copyPrintsTheUploadIDFirstAndTheObjectLast() throws {
        let (_, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let path = try makeRandomFile(size: 2 * 5 * 1024 * 1024 + 99, seed: 41)
        defer { TempFiles.remove(path) }
        let result = try Self.blobstream(["s3", "cp", "--endpoint", TestServers.motoURL.absoluteString, "--part-size", "5M",
                                          "--parallel", "2", "--checksum", "sha256", path, "s3://\(bucket)/cli/obj"])
        #expect(result.status == 0, "\(result.standardError)")
        let lines = result.standardOutput.split(separator: "\n").map(String.init)
        try #require(lines.count == 2)
        #expect(lines[0].count >= 8)
        #expect(lines[1].hasPrefix("s3://\(bucket)/cli/obj \""))
        let fields = lines[1].split(separator: " ")
        #expect(fields.count >= 2 && fields[1].hasSuffix("-3\""), "the ETag of 3 parts: \(lines[1])")
        #expect(result.standardError.isEmpty)   // no progress bar: standard error is no terminal
        #expect(try MotoS3.sha256(bucket: bucket, key: "cli/obj") == TempFiles.sha256(ofFileAtPath: path))
    }

    /// `--checksum crc64nvme` is a full-object multipart upload moto accepts (the wire tests
    /// check its fields); `--full-object` does the same with crc32c.
    @Test(arguments: [["--checksum", "crc64nvme"], ["--checksum", "crc32c", "--full-object"]])
    func copyWithAFullObjectChecksum(options: [String]) throws {
        let (_, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let path = try makeRandomFile(size: 5 * 1024 * 1024 + 77, seed: 42)
        defer { TempFiles.remove(path) }
        let result = try Self.blobstream(["s3", "cp", "--endpoint", TestServers.motoURL.absoluteString, "--part-size", "5M"]
                                         + options + [path, "s3://\(bucket)/cli/full"])
        #expect(result.status == 0, "\(result.standardError)")
        let last = result.standardOutput.split(separator: "\n").last.map(String.init) ?? ""
        let fields = last.split(separator: " ").map(String.init)
        #expect(fields.count == 3 && fields[1].hasSuffix("-2\""), "\(result.standardOutput)")
        // The whole object's CRC, as S3 prints it (base64 of the big-endian value), is the file's.
        let algorithm = options[1]
        let reference = try S3FullObjectChecksumTests.awscrt(try #require(S3ChecksumAlgorithm(rawValue: algorithm)), ofFileAtPath: path)
        #expect(fields.last == "\(algorithm)=\(reference)", "the whole object's CRC as awscrt computes it: \(last)")
        // moto names no checksum back: the CLI says so rather than implying a proof.
        #expect(result.standardError.contains("not verified by the server"), "\(result.standardError)")
        #expect(try MotoS3.sha256(bucket: bucket, key: "cli/full") == TempFiles.sha256(ofFileAtPath: path))
    }

    /// `--checksum none`: the object line names no checksum (none was sent), and no note says
    /// that one went unverified; a single PUT and a multipart upload alike.
    @Test(arguments: [1000, 5 * 1024 * 1024 + 5])
    func copyWithoutChecksumsNamesNone(size: Int) throws {
        let (_, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let path = try makeRandomFile(size: size, seed: 43)
        defer { TempFiles.remove(path) }
        let result = try Self.blobstream(["s3", "cp", "--endpoint", TestServers.motoURL.absoluteString, "--part-size", "5M",
                                          "--checksum", "none", path, "s3://\(bucket)/cli/none"])
        #expect(result.status == 0, "\(result.standardError)")
        let last = result.standardOutput.split(separator: "\n").last.map(String.init) ?? ""
        let fields = last.split(separator: " ").map(String.init)
        #expect(fields.count == 2 && fields[0] == "s3://\(bucket)/cli/none" && fields[1].hasPrefix("\""), "\(result.standardOutput)")
        #expect(result.standardError.isEmpty, "\(result.standardError)")
        #expect(try MotoS3.sha256(bucket: bucket, key: "cli/none") == TempFiles.sha256(ofFileAtPath: path))
    }

    @Test(arguments: [
        (["s3", "cp", "/etc/hostname", "s3://bucket/key"], "no S3 endpoint"),
        (["s3", "cp", "--endpoint", "http://127.0.0.1:1", "/etc/hostname", "bucket/key"], "not an s3://bucket/key URL"),
        (["s3", "cp", "--endpoint", "http://127.0.0.1:1", "/etc/hostname", "s3://bucket"], "names no bucket and key"),
        (["s3", "cp", "--endpoint", "http://127.0.0.1:1", "--part-size", "1M", "/etc/hostname", "s3://bucket/k"], "--part-size"),
        (["s3", "cp", "--endpoint", "http://127.0.0.1:1", "--parallel", "0", "/etc/hostname", "s3://bucket/k"], "--parallel"),
        (["s3", "cp", "--endpoint", "http://127.0.0.1:1", "--parallel", "+3", "/etc/hostname", "s3://bucket/k"], "--parallel"),
        (["s3", "cp", "--endpoint", "http://127.0.0.1:1", "--checksum", "md5", "/etc/hostname", "s3://bucket/k"], "--checksum"),
        (["s3", "cp", "--endpoint", "http://127.0.0.1:1", "--checksum", "sha256", "--full-object", "/etc/hostname", "s3://bucket/k"], "--full-object"),
        (["s3", "cp", "--endpoint", "ftp://s3.amazonaws.com", "/etc/hostname", "s3://bucket/k"], "is not an http:// or https:// URL"),
        (["s3", "cp", "--cacert", "/nonexistent/ca.pem", "--endpoint", "https://127.0.0.1:1", "/etc/hostname", "s3://bucket/k"], "--cacert /nonexistent/ca.pem"),
        (["s3", "cp", "--cacert", "/etc/hostname", "--endpoint", "https://127.0.0.1:1", "/etc/hostname", "s3://bucket/k"], "--cacert /etc/hostname: cannot load the CA certificates"),
        (["s3", "cp", "--endpoint", "http://127.0.0.1:1", "/etc/hostname", "s3://B_/k"], "not an S3 bucket name"),
        (["s3", "abort", "--endpoint", "http://127.0.0.1:1", "s3://bucket/k"], "expected s3://bucket/key and UPLOAD_ID"),
    ])
    func wrongCommandLinesAreUsageErrors(arguments: [String], message: String) throws {
        let result = try Self.blobstream(arguments)
        #expect(result.status == 64)
        #expect(result.standardError.contains(message), "\(result.standardError)")
        #expect(result.standardOutput.isEmpty)
    }

    /// An IPv6 endpoint with nothing listening fails like any refused connection, not by a trap.
    @Test func anIPv6EndpointIsUsable() throws {
        let result = try Self.blobstream(["s3", "cp", "--endpoint", "http://[::1]:1", "/etc/hostname", "s3://bucket/k"])
        #expect(result.status == 1, "\(result.standardError)")
        #expect(result.standardError.contains("cannot connect to [::1]:1 "), "\(result.standardError)")
    }

    @Test func standardInputIsReadUntilItEndsAndUploadedInParts() throws {
        let (_, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let path = try makeRandomFile(size: 5 * 1024 * 1024 + 7, seed: 43)
        defer { TempFiles.remove(path) }
        let child = try ToolProcess.startBlobstream(["s3", "cp", "--endpoint", TestServers.motoURL.absoluteString, "--part-size", "5M",
                                    "-", "s3://\(bucket)/from-stdin"],
                                   environment: Self.environment, standardInput: FileHandle(forReadingAtPath: path).map { .file($0) } ?? .nothing)
        let result = child.finish()
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput.split(separator: "\n").last?.hasSuffix("-2\"") == true, "\(result.standardOutput)")
        #expect(try MotoS3.sha256(bucket: bucket, key: "from-stdin") == TempFiles.sha256(ofFileAtPath: path))
    }

    /// Missing credentials say which variables to set, and nothing a command line cannot do.
    @Test func missingCredentialsNameTheVariables() throws {
        let result = try ToolProcess.run(
            try ToolProcess.blobstream(), ["s3", "cp", "--endpoint", "http://127.0.0.1:1", "/etc/hostname", "s3://bucket/k"],
            environment: ["AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_ENDPOINT_URL": ""])
        #expect(result.status == 1)
        #expect(result.standardError.contains("set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"), "\(result.standardError)")
        #expect(!result.standardError.contains("S3Credentials"), "\(result.standardError)")
    }

    @Test func abortingAnUnknownUploadFailsAndSaysItIsGone() throws {
        let (_, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let result = try Self.blobstream(["s3", "abort", "--endpoint", TestServers.motoURL.absoluteString, "s3://\(bucket)/k", "no-such-id"])
        #expect(result.status == 1)
        #expect(result.standardError.contains("no-such-id is gone"), "\(result.standardError)")
        #expect(result.standardError.contains("nothing to abort"), "\(result.standardError)")
        #expect(!result.standardError.contains("start a new upload"), "advice for an upload that was to go on: \(result.standardError)")
        #expect(!result.standardError.contains("cli-secret-never-printed"))
    }

    /// After a failure another run would meet again (here a server whose Complete answer names
    /// no ETag), the command does not send the user to `--resume`.
    @Test func aBrokenProtocolIsNotOfferedAResume() throws {
        let empty = S3ErrorTests.answer("200 OK", body: "<CompleteMultipartUploadResult><ETag></ETag></CompleteMultipartUploadResult>")
        let server = try ScriptedHTTPServer(connections: [
            [S3ErrorTests.created], [S3ErrorTests.partStored], [S3ErrorTests.partStored], [empty],
        ])
        let path = try makeRandomFile(size: 5 * 1024 * 1024 + 1, seed: 42)
        defer { TempFiles.remove(path) }
        let result = try Self.blobstream(["s3", "cp", "--endpoint", "http://127.0.0.1:\(server.port)", "--part-size", "5M",
                                          "--parallel", "1", "--checksum", "crc32", path, "s3://scripted-bucket/k"])
        #expect(result.status == 1)
        #expect(result.standardError.contains("names no ETag"), "\(result.standardError)")
        #expect(!result.standardError.contains("--resume"), "\(result.standardError)")
        #expect(result.standardError.contains("delete it with blobstream s3 abort s3://scripted-bucket/k UP-1"), "\(result.standardError)")
    }

    /// The hints come from the error's case, not its text: an S3 refusal whose message quotes
    /// a URL with the upload id in it (a redirect of UploadPart to another query) still says
    /// how to delete the upload. (It used to be dropped whenever the id was in the message.)
    @Test func theAbortHintIsGivenWhenTheMessageQuotesTheUploadID() throws {
        let redirect = S3ErrorTests.answer("307 Temporary Redirect", fields: ["Location: /scripted-bucket/k"])
        let server = try ScriptedHTTPServer(connections: [[S3ErrorTests.created], [redirect]])
        let path = try makeRandomFile(size: 5 * 1024 * 1024 + 1, seed: 43)
        defer { TempFiles.remove(path) }
        let result = try Self.blobstream(["s3", "cp", "--endpoint", "http://127.0.0.1:\(server.port)", "--part-size", "5M",
                                          "--parallel", "1", path, "s3://scripted-bucket/k"])
        #expect(result.status == 1)
        #expect(result.standardError.contains("S3 UploadPart"), "\(result.standardError)")
        #expect(result.standardError.contains("uploadId=UP-1"), "\(result.standardError)")
        #expect(!result.standardError.contains("--resume"), "\(result.standardError)")
        #expect(result.standardError.contains("delete it with blobstream s3 abort s3://scripted-bucket/k UP-1"), "\(result.standardError)")
    }

    /// An S3 error answer names the upload id in its own words ("upload UP-1, part 1"); the
    /// `--resume` hint for a failure another run may pass (expired credentials) is still given.
    @Test func theResumeHintIsGivenWhenTheMessageNamesTheUploadID() throws {
        let denied = S3ErrorTests.error("403 Forbidden", code: "ExpiredToken", message: "The provided token has expired.")
        let server = try ScriptedHTTPServer(connections: [[S3ErrorTests.created], [denied]])
        let path = try makeRandomFile(size: 5 * 1024 * 1024 + 1, seed: 44)
        defer { TempFiles.remove(path) }
        let result = try Self.blobstream(["s3", "cp", "--endpoint", "http://127.0.0.1:\(server.port)", "--part-size", "5M",
                                          "--parallel", "1", path, "s3://scripted-bucket/k"])
        #expect(result.status == 1)
        #expect(result.standardError.contains("UploadPart scripted-bucket/k (upload UP-1, part 1)"), "\(result.standardError)")
        #expect(result.standardError.contains("(continue with --resume UP-1)"), "\(result.standardError)")
    }

    @Test func aServerThatIsNotThereFailsAtOnce() throws {
        let result = try Self.blobstream(["s3", "cp", "--endpoint", "http://127.0.0.1:1", "/etc/hostname", "s3://bucket/k"])
        #expect(result.status == 1)
        #expect(result.standardError.contains("cannot connect to 127.0.0.1:1"), "\(result.standardError)")
        #expect(!result.standardError.contains("retry"))
    }
}

/// Ctrl-C in the middle of `s3 cp`: the command says how to continue, and exits 130.
@Suite struct S3CommandInterruptionTests {
    @Test func anInterruptedCopySaysHowToResume() async throws {
        let (client, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let path = try makeRandomFile(size: 3 * 5 * 1024 * 1024, seed: 42)
        defer { TempFiles.remove(path) }
        // Held after one part, so the signal always lands in the middle of the upload.
        let proxy = try RecordingProxy(holdingAfter: 5 * 1024 * 1024)
        let child = try ToolProcess.startBlobstream([
            "s3", "cp", "--endpoint", proxy.endpoint.absoluteString, "--part-size", "5M", path, "s3://\(bucket)/int.bin",
        ], environment: S3CommandTests.environment)
        let printedID = await offThePool { child.firstLine(timeout: 60) }
        kill(child.processIdentifier, SIGINT)
        let result = await child.finished()
        _ = try await proxy.finished()
        let id = try #require(printedID, "status \(result.status): \(result.standardError)")
        #expect(result.status == 130)
        #expect(result.standardOutput == id + "\n")
        #expect(result.standardError.contains("upload interrupted; continue with --resume \(id)"), "\(result.standardError)")
        // Still there, resumable.
        _ = try await client.listParts(key: "int.bin", uploadID: id)
    }

    /// `s3 abort` and `s3 ls-uploads` interrupted while their server has not answered: each
    /// says what it was doing and what may be left, and exits 130, as its help says.
    @Test(arguments: [
        (["s3", "abort", "s3://bkt/k", "UP-1"], "while aborting UP-1, which may or may not be deleted"),
        (["s3", "abort", "--older-than", "1d", "s3://bkt/p"], "interrupted after aborting 0 unfinished uploads"),
        (["s3", "ls-uploads", "s3://bkt/p"], "listing interrupted; nothing listed"),
    ])
    func anInterruptedAbortOrListingSaysSo(arguments: [String], message: String) async throws {
        // Listening, never accepting: the request goes out and no answer comes.
        let (listener, port) = try LoopbackSocket.listening()
        defer { close(listener) }
        let child = try ToolProcess.startBlobstream(
            [arguments[0], arguments[1], "--endpoint", "http://127.0.0.1:\(port)"] + arguments.dropFirst(2),
            environment: S3CommandTests.environment)
        try await Task.sleep(nanoseconds: 1_000_000_000)
        kill(child.processIdentifier, SIGINT)
        let result = await child.finished()
        #expect(result.status == 130, "\(result.standardError)")
        #expect(result.standardError.contains(message), "\(result.standardError)")
    }
}
