import BlobTestSupport
import Foundation
import Testing

/// `--help`, `-h` and `help` at every level print usage on standard output and exit 0; a
/// group without its subcommand is a usage error that still shows the subcommands.
@Suite struct HelpTests {
    func blobstream(_ arguments: [String]) async throws -> ToolProcess.Result {
        try await ToolProcess.execute(ToolProcess.blobstream(), arguments)
    }

    static let helps: [([String], String)] = [
        (["--help"], "usage: blobstream <command>"),
        (["-h"], "usage: blobstream <command>"),
        (["help"], "usage: blobstream <command>"),
        (["asset", "--help"], "usage: blobstream asset <subcommand>"),
        (["asset", "-h"], "usage: blobstream asset <subcommand>"),
        (["help", "asset"], "usage: blobstream asset <subcommand>"),
        (["asset", "import", "--help"], "usage: blobstream asset import"),
        (["help", "asset", "import"], "usage: blobstream asset import"),
        (["checksum", "--help"], "usage: blobstream checksum"),
        (["help", "checksum"], "usage: blobstream checksum"),
        (["upload", "--help"], "usage: blobstream upload"),
        (["upload", "-h"], "usage: blobstream upload"),
        (["help", "upload"], "usage: blobstream upload"),
        (["put", "--help"], "usage: blobstream put"),
        (["help", "put"], "usage: blobstream put"),
        (["upload", "--chunk-size", "1", "--help"], "usage: blobstream upload"),
    ]

    @Test(arguments: helps)
    func everyHelpPrintsUsageAndExitsZero(arguments: [String], usage: String) async throws {
        let result = try await blobstream(arguments)
        #expect(result.status == 0, "\(arguments): \(result.standardError)")
        #expect(result.standardOutput.hasPrefix(usage), "\(arguments)")
        #expect(result.standardError.isEmpty)
    }

    @Test func aGroupWithoutItsSubcommandIsAUsageErrorThatListsThem() async throws {
        let result = try await blobstream(["asset"])
        #expect(result.status == 64)
        #expect(result.standardError.contains("asset import"))
        #expect(result.standardOutput.isEmpty)
    }
}
