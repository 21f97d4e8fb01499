import BlobTestSupport
import Foundation
import Glibc
import Testing

/// Ctrl-C (SIGINT) and SIGTERM while a command works: the command says what was interrupted
/// and how to continue, and exits with 128 + the signal (130, 143). The work is held up by the
/// stall server, which never answers, or by a standard input that never ends.
@Suite struct InterruptionTests {
    /// Starts `arguments`, waits until the command handles signals, sends `signal`, and
    /// returns how it ended.
    func interrupt(_ arguments: [String], with signal: Int32, afterPrinting output: String? = nil) async throws -> ToolProcess.Result {
        let process = try ToolProcess.startBlobstream(arguments, standardInput: .pipe)
        // `output`: otherwise the signal can arrive before the command reached the part under test.
        let ready = await process.send(signal, once: .init(printed: output))
        #expect(ready.handlesSignals, "the command never set up its signal handling")
        #expect(ready.printed, "the command never printed \(output ?? "")")
        return await process.finished()
    }

    @Test(arguments: [(SIGINT, Int32(130), "interrupted"), (SIGTERM, 143, "terminated (SIGTERM)")])
    func uploadInterruptedBeforeTheUploadExistsSaysNothingWasCreated(signal: Int32, status: Int32, word: String) async throws {
        try TestServers.requireNginx()
        let result = try await interrupt(["upload", "/etc/hostname", TestServers.stallForeverURL().absoluteString], with: signal)
        #expect(result.status == status, "\(result.standardError)")
        #expect(result.standardOutput.isEmpty)
        // On a loaded machine the signal can come after the OPTIONS timed out once: the retry
        // lines before the last one are then part of the right answer.
        var lines = result.standardError.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.popLast() == "", "standard error ends with a newline")
        #expect(lines.popLast() == "blobstream upload: /etc/hostname: upload \(word) before the server created an upload; nothing to resume",
                "\(result.standardError)")
        #expect(lines.allSatisfy { $0.hasPrefix("blobstream upload: retry ") }, "\(result.standardError)")
    }

    @Test func resumedUploadInterruptedNamesTheUploadToResume() async throws {
        try TestServers.requireNginx()
        let uploadURL = TestServers.stallForeverURL().absoluteString + "/upload-id"
        let result = try await interrupt(["upload", "--resume", uploadURL, "/etc/hostname", TestServers.stallForeverURL().absoluteString],
                                   with: SIGTERM)
        #expect(result.status == 143)
        #expect(result.standardError.hasSuffix("upload terminated (SIGTERM); continue with --resume \(uploadURL)\n"))
    }

    @Test func putInterruptedSaysSo() async throws {
        try TestServers.requireNginx()
        let result = try await interrupt(["put", "/etc/hostname", TestServers.stallForeverURL().absoluteString], with: SIGTERM)
        #expect(result.status == 143)
        #expect(result.standardError == "blobstream put: /etc/hostname: PUT terminated (SIGTERM) before the server confirmed it; "
            + "run it again to be sure the server has the whole body\n")
    }

    @Test(arguments: [(SIGINT, Int32(130), "interrupted"), (SIGTERM, 143, "terminated (SIGTERM)")])
    func checksumInterruptedSaysSo(signal: Int32, status: Int32, word: String) async throws {
        try TestServers.requireNginx()
        let url = TestServers.stallURL(afterBytes: 100_000).absoluteString
        let hostname = try TempFiles.sha256(ofFileAtPath: "/etc/hostname")
        let result = try await interrupt(["checksum", "/etc/hostname", url, "/etc/hostname"], with: signal,
                                   afterPrinting: "\(hostname)  /etc/hostname\n")
        #expect(result.status == status)
        #expect(result.standardOutput == "\(hostname)  /etc/hostname\n", "the files after the interrupted one are not read")
        #expect(result.standardError == "blobstream checksum: \(url): \(word); no checksum printed for it\n")
    }

    @Test func checksumOfStandardInputThatNeverEndsIsInterruptible() async throws {
        let process = try ToolProcess.startBlobstream(["checksum", "-"], standardInput: .pipe)
        await process.feed(Data("some bytes".utf8))
        #expect(await process.send(SIGINT, once: .init()).handlesSignals)
        // Standard input stays open until the child exited: its end would be a reason to finish.
        #expect(await process.exited())
        let result = await process.finished()
        #expect(result.status == 130)
        #expect(result.standardOutput.isEmpty)
        #expect(result.standardError == "blobstream checksum: -: interrupted; no checksum printed for it\n")
    }
}
