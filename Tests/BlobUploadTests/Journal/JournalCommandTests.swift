import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import Testing

/// What `upload` and `s3 cp` do with the journal besides continuing: a source changed since
/// the kill, an upload the server forgot, `--no-resume`, a journal that cannot be written,
/// input read once, and several processes sharing the journal at once.
@Suite struct JournalCommandTests {
    static let size = 64 << 20
    /// Kills a run once the server confirmed 16 MiB, one more MiB after that.
    static let kill: (point: Int64, extra: Int64) = (16 << 20, 1 << 20)

    @Test func aTusSourceChangedAfterTheKillStartsANewUploadAndSaysSo() async throws {
        let server = try await TusServerProcess.start()
        defer { server.stop() }
        let (path, state) = try Self.scratch(seed: 2211)
        defer { TempFiles.remove(path); TempFiles.remove(state) }
        let proxy = try KillingProxy(protocol: "tus", targetPort: server.port)
        defer { _ = try? proxy.finish() }
        let arguments = ["upload", path, "http://127.0.0.1:\(proxy.port)/files/"]
        let old = try await JournalKillTests.killedUpload(arguments, state: state, killedBy: proxy)

        // Rewritten in place: same path, inode and length, other bytes.
        try Self.rewrite(path, seed: 2212)
        let rerun = try await ToolProcess.execute(try ToolProcess.blobstream(), arguments, environment: ["XDG_STATE_HOME": state])
        #expect(rerun.status == 0, "\(rerun.standardError)")
        let new = try #require(rerun.standardOutput.split(separator: "\n").first.map(String.init))
        #expect(new != old)
        #expect(rerun.standardError.contains("not resuming \(old): the source changed since the upload started"), "\(rerun.standardError)")
        #expect(rerun.standardError.contains("starting a new upload"))
        #expect(!rerun.standardError.contains("resuming \(old) at"))
        #expect(try tusStoredCopyMatches(try #require(URL(string: new)), file: path, dataRoot: server.dataDirectory))
        #expect(JournalKillTests.entries(state).isEmpty)
    }

    @Test func anS3SourceChangedAfterTheKillStartsANewUploadAndAbortsTheOld() async throws {
        let (_, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let (path, state) = try Self.scratch(seed: 2213)
        defer { TempFiles.remove(path); TempFiles.remove(state) }
        let proxy = try KillingProxy(protocol: "s3", targetPort: TestServers.motoPort)
        defer { _ = try? proxy.finish() }
        let arguments = ["s3", "cp", "--endpoint", "http://127.0.0.1:\(proxy.port)", path, "s3://\(bucket)/changed.bin"]
        let old = try await JournalKillTests.killedUpload(arguments, state: state, killedBy: proxy)

        try Self.rewrite(path, seed: 2214)
        let rerun = try await ToolProcess.execute(
            try ToolProcess.blobstream(), arguments, environment: JournalKillTests.s3Environment(state))
        #expect(rerun.status == 0, "\(rerun.standardError)")
        let new = try #require(rerun.standardOutput.split(separator: "\n").first.map(String.init))
        #expect(new != old)
        #expect(rerun.standardError.contains("not resuming \(old): the source changed since the upload started"), "\(rerun.standardError)")
        #expect(rerun.standardError.contains("it was aborted; starting a new upload"), "\(rerun.standardError)")
        #expect(try MotoS3.sha256(bucket: bucket, key: "changed.bin") == TempFiles.sha256(ofFileAtPath: path))
        #expect(try MotoS3.uploadIDs(bucket: bucket).isEmpty)
        #expect(JournalKillTests.entries(state).isEmpty)
    }

    @Test func aTusUploadTheServerForgotIsStartedAnew() async throws {
        let server = try await TusServerProcess.start()
        defer { server.stop() }
        let (path, state) = try Self.scratch(seed: 2215)
        defer { TempFiles.remove(path); TempFiles.remove(state) }
        let proxy = try KillingProxy(protocol: "tus", targetPort: server.port)
        defer { _ = try? proxy.finish() }
        let arguments = ["upload", path, "http://127.0.0.1:\(proxy.port)/files/"]
        let old = try await JournalKillTests.killedUpload(arguments, state: state, killedBy: proxy)
        // Terminated (DELETE) on the server itself, past the proxy, whose origin the URL names.
        let direct = try #require(URL(string: old.replacingOccurrences(of: ":\(proxy.port)/", with: ":\(server.port)/")))
        try await TusClient(endpoint: server.filesURL).terminate(direct)

        let rerun = try await ToolProcess.execute(try ToolProcess.blobstream(), arguments, environment: ["XDG_STATE_HOME": state])
        #expect(rerun.status == 0, "\(rerun.standardError)")
        let new = try #require(rerun.standardOutput.split(separator: "\n").first.map(String.init))
        #expect(new != old)
        #expect(rerun.standardError.contains("not resuming \(old): the server no longer has it (404)")
            || rerun.standardError.contains("not resuming \(old): the server no longer has it (410)"), "\(rerun.standardError)")
        #expect(try tusStoredCopyMatches(try #require(URL(string: new)), file: path, dataRoot: server.dataDirectory))
        #expect(JournalKillTests.entries(state).isEmpty)
    }

    /// A journaled upload is named before its server is asked about it; one the server refuses
    /// (400: another account's token, say) fails with that answer, and the message says it is
    /// the journal's and how to start afresh instead of failing the same way on every run.
    @Test func aJournaledUploadTheServerRefusesNamesTheJournal() async throws {
        let (path, state) = try Self.scratch(seed: 2301, size: 100_000)
        defer { TempFiles.remove(path); TempFiles.remove(state) }
        let server = try ScriptedHTTPServer(connections: [[
            ScriptedTus.options, "HTTP/1.1 400 Bad Request\r\nTus-Resumable: 1.0.0\r\nContent-Length: 0\r\n\r\n",
        ]])
        defer { server.stop() }
        let endpoint = "http://127.0.0.1:\(server.port)/files/"
        let journaled = "http://127.0.0.1:\(server.port)/files/journaled"
        let version = Locked<String?>(nil)
        FileDataSource(path: path).open { if case .success(let description) = $0 { version.value = description.version } }
        try FileUploadJournal(directory: state + "/blobstream/uploads").record(UploadJournalEntry(
            key: UploadJournalKey(source: path, destination: endpoint), sourceVersion: try #require(version.value),
            length: 100_000, upload: .tus(uploadURL: try #require(URL(string: journaled)))))

        let run = try await ToolProcess.execute(try ToolProcess.blobstream(), ["upload", path, endpoint], environment: ["XDG_STATE_HOME": state])
        #expect(run.status == 1, "\(run.standardError)")
        #expect(run.standardError.contains("the upload journal has \(journaled); asking the server"), "\(run.standardError)")
        #expect(run.standardError.contains("\(journaled) is the upload journal's: --no-resume starts a new upload instead"),
                "\(run.standardError)")
    }

    @Test func anS3UploadTheServerForgotIsStartedAnew() async throws {
        let (client, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let (path, state) = try Self.scratch(seed: 2216)
        defer { TempFiles.remove(path); TempFiles.remove(state) }
        let proxy = try KillingProxy(protocol: "s3", targetPort: TestServers.motoPort)
        defer { _ = try? proxy.finish() }
        let arguments = ["s3", "cp", "--endpoint", "http://127.0.0.1:\(proxy.port)", path, "s3://\(bucket)/gone.bin"]
        let old = try await JournalKillTests.killedUpload(arguments, state: state, killedBy: proxy)
        try await client.abort(key: "gone.bin", uploadID: old)

        let rerun = try await ToolProcess.execute(
            try ToolProcess.blobstream(), arguments, environment: JournalKillTests.s3Environment(state))
        #expect(rerun.status == 0, "\(rerun.standardError)")
        #expect(rerun.standardOutput.split(separator: "\n").first.map(String.init) != old)
        #expect(rerun.standardError.contains("not resuming \(old): the server no longer has it (NoSuchUpload); starting a new upload"),
                "\(rerun.standardError)")
        #expect(try MotoS3.sha256(bucket: bucket, key: "gone.bin") == TempFiles.sha256(ofFileAtPath: path))
        #expect(JournalKillTests.entries(state).isEmpty)
    }

    @Test func noResumeStartsAfreshAndIsItselfResumedLater() async throws {
        let server = try await TusServerProcess.start()
        defer { server.stop() }
        let (path, state) = try Self.scratch(seed: 2217)
        defer { TempFiles.remove(path); TempFiles.remove(state) }
        let proxy = try KillingProxy(protocol: "tus", targetPort: server.port)
        defer { _ = try? proxy.finish() }
        let endpoint = "http://127.0.0.1:\(proxy.port)/files/"
        let old = try await JournalKillTests.killedUpload(["upload", path, endpoint], state: state, killedBy: proxy)

        let fresh = try await JournalKillTests.run(["upload", "--no-resume", path, endpoint], state: state, killedBy: proxy, at: Self.kill)
        try #require(fresh.signal == SIGKILL, "\(fresh.standardError)")
        let new = try #require(fresh.standardOutput.split(separator: "\n").first.map(String.init))
        #expect(new != old)
        #expect(fresh.standardError.contains("not resuming \(old): a new upload was asked for; starting a new upload"), "\(fresh.standardError)")
        #expect(!fresh.standardError.contains("resuming \(old) at"), "\(fresh.standardError)")

        // The journal now names the upload --no-resume started.
        let last = try await ToolProcess.execute(try ToolProcess.blobstream(), ["upload", path, endpoint], environment: ["XDG_STATE_HOME": state])
        #expect(last.status == 0, "\(last.standardError)")
        #expect(last.standardError.contains("resuming \(new) at "), "\(last.standardError)")
        #expect(try tusStoredCopyMatches(try #require(URL(string: new)), file: path, dataRoot: server.dataDirectory))
        #expect(JournalKillTests.entries(state).isEmpty)

        let both = try await ToolProcess.execute(
            try ToolProcess.blobstream(), ["upload", "--no-resume", "--resume", new, path, endpoint], environment: ["XDG_STATE_HOME": state])
        #expect(both.status == 64, "\(both.standardError)")
    }

    @Test(arguments: ["upload", "s3"])
    func aJournalThatCannotBeWrittenWarnsOnceAndTheUploadRuns(_ command: String) async throws {
        let (path, state) = try Self.scratch(seed: 2218, size: 12 << 20)
        defer { TempFiles.remove(path); TempFiles.remove(state) }
        // A regular file where the state directory should be: nothing can be created under it.
        let blocked = state + "/not-a-directory"
        try Data("x".utf8).write(to: URL(fileURLWithPath: blocked))
        let result: ToolProcess.Result
        if command == "upload" {
            try TestServers.requireTus()
            result = try await ToolProcess.execute(
                try ToolProcess.blobstream(), ["upload", "--chunk-size", "1M", path, TestServers.tusFilesURL.absoluteString],
                environment: ["XDG_STATE_HOME": blocked])
            if let url = result.standardOutput.split(separator: "\n").last.flatMap({ URL(string: String($0)) }) {
                #expect(try tusStoredCopyMatches(url, file: path))
                TestServers.removeUploads([url])
            }
        } else {
            let (_, bucket) = try MotoS3.makeBucket()
            defer { MotoS3.removeBucket(bucket) }
            var environment = JournalKillTests.s3Environment(blocked)
            environment["XDG_STATE_HOME"] = blocked
            result = try await ToolProcess.execute(
                try ToolProcess.blobstream(),
                ["s3", "cp", "--endpoint", TestServers.motoURL.absoluteString, "--part-size", "5M", path, "s3://\(bucket)/blocked.bin"],
                environment: environment)
            #expect(try MotoS3.sha256(bucket: bucket, key: "blocked.bin") == TempFiles.sha256(ofFileAtPath: path))
        }
        #expect(result.status == 0, "\(result.standardError)")
        let warnings = result.standardError.components(separatedBy: "cannot be resumed automatically").count - 1
        #expect(warnings == 1, "\(result.standardError)")
        #expect(result.standardError.contains("the upload journal at \(blocked)/blobstream"), "\(result.standardError)")
    }

    @Test func standardInputIsNeverJournaled() async throws {
        let (_, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let (path, state) = try Self.scratch(seed: 2219, size: 32 << 20)
        defer { TempFiles.remove(path); TempFiles.remove(state) }
        let proxy = try KillingProxy(protocol: "s3", targetPort: TestServers.motoPort)
        defer { _ = try? proxy.finish() }
        let input = try #require(FileHandle(forReadingAtPath: path))
        let child = try ToolProcess.startBlobstream(
            ["s3", "cp", "--endpoint", "http://127.0.0.1:\(proxy.port)", "--part-size", "5M", "-", "s3://\(bucket)/piped.bin"],
            environment: JournalKillTests.s3Environment(state), standardInput: .file(input))
        proxy.arm(pid: child.processIdentifier, point: 10 << 20, extra: 1 << 20)
        let ended = await child.finished()
        #expect(ended.signal == SIGKILL, "\(ended.standardError)")
        // Not even the journal's directory was made.
        #expect(!FileManager.default.fileExists(atPath: state + "/blobstream"))
    }

    @Test func processesSharingTheJournalEachResumeTheirOwnUpload() async throws {
        let (_, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let state = try TempFiles.makeDirectory(prefix: "journal-state")
        defer { TempFiles.remove(state) }
        let paths = try (0..<3).map { try makeRandomFile(size: 40 << 20, seed: 2240 + UInt64($0)) }
        defer { paths.forEach(TempFiles.remove) }
        // A proxy each, so that each process is killed by bytes of its own upload.
        let proxies = try paths.map { _ in try KillingProxy(protocol: "s3", targetPort: TestServers.motoPort) }
        defer { proxies.forEach { _ = try? $0.finish() } }
        let arguments = zip(paths, proxies).enumerated().map { index, pair in
            ["s3", "cp", "--endpoint", "http://127.0.0.1:\(pair.1.port)", "--part-size", "5M", "--parallel", "2", pair.0,
             "s3://\(bucket)/shared-\(index).bin"]
        }
        // All three at once, writing their entries into one directory, killed once 10 MiB of
        // each are on the server.
        let children = try arguments.map {
            try ToolProcess.start(try ToolProcess.blobstream(), $0, environment: JournalKillTests.s3Environment(state))
        }
        for (child, proxy) in zip(children, proxies) {
            proxy.arm(pid: child.processIdentifier, point: 10 << 20, extra: 512 << 10)
        }
        var ids: [String] = []
        for child in children {
            let ended = await child.finished()
            try #require(ended.signal == SIGKILL, "\(ended.standardError)")
            ids.append(try #require(ended.standardOutput.split(separator: "\n").first.map(String.init)))
        }
        #expect(JournalKillTests.entries(state).count == 3)

        let reruns = try arguments.map {
            try ToolProcess.start(try ToolProcess.blobstream(), $0, environment: JournalKillTests.s3Environment(state))
        }
        for (index, rerun) in reruns.enumerated() {
            let ended = await rerun.finished()
            #expect(ended.status == 0, "\(ended.standardError)")
            #expect(ended.standardError.contains("resuming \(ids[index]) at "), "\(ended.standardError)")
            #expect(!ended.standardError.contains("warning"), "\(ended.standardError)")
            #expect(try MotoS3.sha256(bucket: bucket, key: "shared-\(index).bin") == TempFiles.sha256(ofFileAtPath: paths[index]))
        }
        #expect(JournalKillTests.entries(state).isEmpty)
        #expect(try MotoS3.uploadIDs(bucket: bucket).isEmpty)
    }

    /// A source file of `size` bytes for `seed`, and an empty state directory.
    static func scratch(seed: UInt64, size: Int = Self.size) throws -> (path: String, state: String) {
        let path = try makeRandomFile(size: size, seed: seed)
        let state = try TempFiles.removing(path) { try TempFiles.makeDirectory(prefix: "journal-state") }
        return (path, state)
    }

    /// Overwrites the file at `path` in place with other bytes of the same length.
    static func rewrite(_ path: String, seed: UInt64) throws {
        let handle = try #require(FileHandle(forWritingAtPath: path))
        defer { try? handle.close() }
        let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        var offset = 0
        while offset < size {
            let count = min(1 << 20, size - offset)
            handle.write(Data(TempFiles.pseudoRandomBytes(count: count, seed: seed, from: offset)))
            offset += count
        }
    }
}
