import BlobTestSupport
import Foundation
import Glibc
import Testing

/// `blobstream upload` suggests `--resume` only after a failure that resuming can finish
/// soundly. Continuing after the source changed, or after a server broke the protocol, would
/// end in an upload reported as a success whose bytes are not the source's.
@Suite struct UploadResumeAdviceTests {
    static let chunk = 64 << 10

    /// A scripted tus server: OPTIONS, a creation at /files/abc, and PATCHes answered by
    /// `patched` (the request, the offset it would reach) after `beforeAnswer` ran.
    static func tusServer(
        patched: @escaping @Sendable (_ reached: Int64) -> Int64,
        beforeAnswer: @escaping @Sendable () -> Void = {}
    ) throws -> ScriptedHTTPServer {
        try tusServer { request in
            let offset = Int64(request.fields["upload-offset"] ?? "") ?? 0
            let length = Int64(request.fields["content-length"] ?? "") ?? 0
            beforeAnswer()
            return ScriptedHTTPServer.response(
                status: "204 No Content", fields: ["Tus-Resumable": "1.0.0", "Upload-Offset": String(patched(offset + length))])
        }
    }

    /// A scripted tus server: OPTIONS, a creation at /files/abc, and PATCHes answered by `patch`.
    static func tusServer(answeringPatch patch: @escaping @Sendable (ScriptedHTTPServer.Request) -> [UInt8]) throws -> ScriptedHTTPServer {
        try ScriptedHTTPServer { request in
            let tus = ["Tus-Resumable": "1.0.0"]
            if request.target == "/files/", request.fields["upload-length"] == nil {
                return ScriptedHTTPServer.response(
                    status: "204 No Content", fields: tus.merging(["Tus-Version": "1.0.0", "Tus-Extension": "creation"]) { $1 })
            }
            if request.target == "/files/" {
                return ScriptedHTTPServer.response(status: "201 Created", fields: tus.merging(["Location": "/files/abc"]) { $1 })
            }
            return patch(request)
        }
    }

    func upload(_ path: String, to server: ScriptedHTTPServer) async throws -> ToolProcess.Result {
        try await ToolProcess.execute(
            ToolProcess.blobstream(), ["upload", "--chunk-size", "64K", path, "http://127.0.0.1:\(server.port)/files/"])
    }

    /// The file grows while its first chunk is on the way: the next read sees another
    /// version. The bytes on the server are of the first one, so the only sound advice is a
    /// new upload.
    @Test func aSourceThatChangedIsNeverToBeResumed() async throws {
        let path = try TempFiles.makeRandomFile(prefix: "resume-advice", size: 3 * Self.chunk + 1, seed: 7)
        defer { TempFiles.remove(path) }
        let server = try Self.tusServer(patched: { $0 }, beforeAnswer: {
            guard let handle = FileHandle(forWritingAtPath: path) else { return }
            defer { try? handle.close() }
            _ = try? handle.seekToEnd()
            try? handle.write(contentsOf: Data([1]))
        })
        defer { server.stop() }

        let result = try await upload(path, to: server)

        #expect(result.status == 1)
        #expect(result.standardError.contains("changed"), "\(result.standardError)")
        #expect(!result.standardError.contains("--resume"), "\(result.standardError)")
        #expect(result.standardError.contains("start a new upload"), "\(result.standardError)")
    }

    /// An expired token (403) passes once it is renewed: the upload continues where it stopped,
    /// so the advice is --resume, not a new upload.
    @Test func aRefusedCredentialIsToBeResumedOnceRenewed() async throws {
        let path = try TempFiles.makeRandomFile(prefix: "resume-advice", size: 2 * Self.chunk, seed: 9)
        defer { TempFiles.remove(path) }
        let server = try Self.tusServer { _ in
            ScriptedHTTPServer.response(status: "403 Forbidden", fields: ["Tus-Resumable": "1.0.0"])
        }
        defer { server.stop() }

        let result = try await upload(path, to: server)

        #expect(result.status == 1)
        #expect(result.standardError.contains("403"), "\(result.standardError)")
        #expect(result.standardError.contains("continue with --resume http://127.0.0.1:\(server.port)/files/abc"), "\(result.standardError)")
    }

    /// A server that confirms bytes it was never sent broke the protocol: another run against
    /// it would trust it again.
    @Test func aProtocolViolationIsNeverToBeResumed() async throws {
        let path = try TempFiles.makeRandomFile(prefix: "resume-advice", size: 2 * Self.chunk, seed: 8)
        defer { TempFiles.remove(path) }
        let server = try Self.tusServer(patched: { $0 + 1000 })
        defer { server.stop() }

        let result = try await upload(path, to: server)

        #expect(result.status == 1)
        #expect(result.standardError.contains("broke the tus protocol"), "\(result.standardError)")
        #expect(!result.standardError.contains("--resume"), "\(result.standardError)")
    }
}
