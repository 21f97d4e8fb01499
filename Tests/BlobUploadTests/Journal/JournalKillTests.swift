import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import Testing

/// `blobstream upload` and `blobstream s3 cp` killed with SIGKILL at 20 random points of a
/// 256 MiB upload and run again each time, unchanged: each run continues from the upload
/// journal where the server says, and the last one leaves a whole object, an empty journal,
/// and no part sent again after the server confirmed it.
@Suite(.serialized) struct JournalKillTests {
    static let size = 256 << 20
    static let mebibyte: Int64 = 1 << 20

    /// 20 kill points, by bytes: once the server confirmed `point` bytes (sorted, random, from
    /// 4 to 192 MiB: at least 64 MiB always remain, more than the parts in flight, so every
    /// run is killed before it can finish), `extra` (random, under 4 MiB) more request body
    /// bytes go out, then the client dies.
    static func killPoints() -> [(point: Int64, extra: Int64)] {
        let points = (0..<20).map { _ in Int64.random(in: 4 * mebibyte...192 * mebibyte) }.sorted()
        return points.map { ($0, Int64.random(in: 0..<4 * mebibyte)) }
    }

    @Test func aTusUploadKilledTwentyTimesEndsWholeFromTheJournal() async throws {
        // A server of its own: clients killed mid-PATCH may hold tuspyserver's upload lock
        // for a while, which must not stall the shared server's other tests.
        let server = try await TusServerProcess.start()
        defer { server.stop() }
        let path = try makeRandomFile(size: Self.size, seed: 2201)
        defer { TempFiles.remove(path) }
        let state = try TempFiles.makeDirectory(prefix: "journal-state")
        defer { TempFiles.remove(state) }
        let proxy = try KillingProxy(protocol: "tus", targetPort: server.port)
        let arguments = ["upload", path, "http://127.0.0.1:\(proxy.port)/files/"]
        var uploadURL: String?
        var resumedAt: Int64 = 0
        for (run, kill) in Self.killPoints().enumerated() {
            let ended = try await Self.run(arguments, state: state, killedBy: proxy, at: kill)
            try #require(ended.signal == SIGKILL, "run \(run + 1) was not killed: status \(ended.status): \(ended.standardError)")
            let printed = ended.standardOutput.split(separator: "\n").first.map(String.init)
            if uploadURL == nil { uploadURL = printed }
            #expect(printed == uploadURL, "run \(run + 1) printed another upload: \(ended.standardOutput)")
            if run > 0 {
                let offset = try #require(Self.resumedOffset(ended.standardError, upload: uploadURL), "run \(run + 1): \(ended.standardError)")
                #expect(offset >= resumedAt, "run \(run + 1) resumed at \(offset), before \(resumedAt)")
                resumedAt = offset
            }
            // A kill in the middle of a journal write leaves the old entry or the new, whole.
            #expect(!ended.standardError.contains("warning"), "run \(run + 1): \(ended.standardError)")
            #expect(Self.entries(state).count == 1)
        }
        let last = try await ToolProcess.execute(try ToolProcess.blobstream(), arguments, environment: ["XDG_STATE_HOME": state])
        #expect(last.status == 0, "\(last.standardError)")
        let url = try #require(uploadURL.flatMap(URL.init(string:)))
        #expect(last.standardOutput.split(separator: "\n").map(String.init) == [url.absoluteString, url.absoluteString])
        #expect(Self.resumedOffset(last.standardError, upload: uploadURL) != nil, "\(last.standardError)")
        #expect(try tusStoredCopyMatches(url, file: path, dataRoot: server.dataDirectory))
        #expect(Self.entries(state).isEmpty)
        #expect(proxy.kills == 20)

        // One upload, created once; every PATCH starts at or past what the server confirmed,
        // and the offsets the server reports never go back.
        let events = try proxy.finish()
        #expect(events.filter { $0.kind == "request" && $0.method == "POST" }.count == 1)
        var confirmed: Int64 = 0
        var reported: Int64 = 0
        for event in events {
            if event.kind == "request", event.method == "PATCH" {
                #expect((event.uploadOffset ?? -1) >= confirmed, "a PATCH from \(event.uploadOffset ?? -1) after \(confirmed) were confirmed")
            }
            guard event.kind == "answer", (200..<300).contains(event.status), let offset = event.uploadOffset else { continue }
            #expect(offset >= reported, "\(event.method) answered Upload-Offset \(offset) after \(reported)")
            reported = max(reported, offset)
            if event.method == "PATCH" { confirmed = max(confirmed, offset) }
        }
        #expect(confirmed == Int64(Self.size))
    }

    @Test func anS3UploadKilledTwentyTimesEndsWholeFromTheJournal() async throws {
        let (_, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let path = try makeRandomFile(size: Self.size, seed: 2202)
        defer { TempFiles.remove(path) }
        let state = try TempFiles.makeDirectory(prefix: "journal-state")
        defer { TempFiles.remove(state) }
        let proxy = try KillingProxy(protocol: "s3", targetPort: TestServers.motoPort)
        let arguments = ["s3", "cp", "--endpoint", "http://127.0.0.1:\(proxy.port)", path, "s3://\(bucket)/killed.bin"]
        var uploadID: String?
        for (run, kill) in Self.killPoints().enumerated() {
            let ended = try await Self.run(arguments, state: state, killedBy: proxy, at: kill)
            try #require(ended.signal == SIGKILL, "run \(run + 1) was not killed: status \(ended.status): \(ended.standardError)")
            let printed = ended.standardOutput.split(separator: "\n").first.map(String.init)
            if uploadID == nil { uploadID = printed }
            #expect(printed == uploadID, "run \(run + 1) printed another upload: \(ended.standardOutput)")
            if run > 0 { #expect(Self.resumedOffset(ended.standardError, upload: uploadID) != nil, "run \(run + 1): \(ended.standardError)") }
            // A kill in the middle of a journal write leaves the old entry or the new, whole.
            #expect(!ended.standardError.contains("warning"), "run \(run + 1): \(ended.standardError)")
            #expect(Self.entries(state).count == 1)
        }
        let last = try await ToolProcess.execute(try ToolProcess.blobstream(), arguments, environment: Self.s3Environment(state))
        #expect(last.status == 0, "\(last.standardError)")
        let lines = last.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines.first == uploadID)
        // The object is made of all 32 parts.
        #expect(lines.last?.contains("-32\"") == true, "\(last.standardOutput)")
        #expect(Self.resumedOffset(last.standardError, upload: uploadID) != nil, "\(last.standardError)")
        #expect(try MotoS3.sha256(bucket: bucket, key: "killed.bin") == TempFiles.sha256(ofFileAtPath: path))
        #expect(try MotoS3.uploadIDs(bucket: bucket).isEmpty)
        #expect(Self.entries(state).isEmpty)
        #expect(proxy.kills == 20)

        // One multipart upload; no part is sent again once the server confirmed it.
        let events = try proxy.finish()
        #expect(events.filter { $0.kind == "request" && $0.method == "POST" && $0.target.contains("?uploads") }.count == 1)
        var confirmed: Set<String> = []
        for event in events where event.method == "PUT" && event.target.contains("partNumber=") {
            if event.kind == "request" {
                #expect(!confirmed.contains(event.target), "\(event.target) sent again after the server confirmed it")
            } else if (200..<300).contains(event.status) {
                confirmed.insert(event.target)
            }
        }
        #expect(!confirmed.isEmpty)
    }

    /// Runs `blobstream arguments` with its journal in `state`, armed to be killed at `kill`.
    static func run(
        _ arguments: [String], state: String, killedBy proxy: KillingProxy, at kill: (point: Int64, extra: Int64)
    ) async throws -> ToolProcess.Result {
        let child = try ToolProcess.start(try ToolProcess.blobstream(), arguments, environment: s3Environment(state))
        proxy.arm(pid: child.processIdentifier, point: kill.point, extra: kill.extra)
        return await child.finished()
    }

    /// ``run(_:state:killedBy:at:)`` with the default kill point of ``JournalCommandTests``,
    /// required to end by SIGKILL: the upload it printed first (a tus URL or an S3 upload id).
    static func killedUpload(_ arguments: [String], state: String, killedBy proxy: KillingProxy) async throws -> String {
        let killed = try await run(arguments, state: state, killedBy: proxy, at: JournalCommandTests.kill)
        try #require(killed.signal == SIGKILL, "\(killed.standardError)")
        return try #require(killed.standardOutput.split(separator: "\n").first.map(String.init))
    }

    static func s3Environment(_ state: String) -> [String: String] {
        ["XDG_STATE_HOME": state, "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"]
    }

    /// The offset of "resuming UPLOAD at N bytes" on standard error.
    static func resumedOffset(_ errors: String, upload: String?) -> Int64? {
        guard let upload, let range = errors.range(of: "resuming \(upload) at ") else { return nil }
        return Int64(errors[range.upperBound...].prefix { $0.isNumber })
    }

    /// The journal entries under the state directory `state`.
    static func entries(_ state: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: state + "/blobstream/uploads")) ?? []).filter { $0.hasSuffix(".json") }
    }
}
