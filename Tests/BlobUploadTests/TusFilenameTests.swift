import BlobStream
import BlobUpload
import Foundation
import Testing
import BlobTestSupport

/// The `filename` a new upload carries is the last path component of the source's name: a
/// URL's query, user or password (a token, a signed link) never reaches the tus server.
@Suite struct TusFilenameTests {
    @Test(arguments: [
        ("http://user:pw@example.com/?token=SECRET", "example.com"),
        ("http://user:SECRET@example.com", "example.com"),
        ("http://example.com/photos/a.jpg?sig=SECRET#SECRET", "a.jpg"),
        ("/tmp/dir/b.bin", "b.bin"),
        ("-", "-"),
    ])
    func theFilenameIsTheLastPathComponentOnly(name: String, expected: String) async throws {
        let server = try ScriptedHTTPServer(connections: [[
            ScriptedTus.options, ScriptedTus.created("/files/a"), ScriptedTus.patched(10),
        ]])
        _ = try await TusClient(endpoint: ScriptedTus.endpoint(server)).upload(
            ScriptedTus.source(10, name: name), options: ScriptedTus.options(chunkSize: 1000))
        let post = try #require(server.requests.dropFirst().first)
        let metadata = try #require(post.split(separator: "\r\n").first { $0.lowercased().hasPrefix("upload-metadata:") })
        let filename = metadata.dropFirst("upload-metadata:".count).split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces).split(separator: " ") }
            .first { $0.first == "filename" }
            .flatMap { Data(base64Encoded: String($0[1])) }
            .map { String(decoding: $0, as: UTF8.self) }
        #expect(filename == expected)
        #expect(!post.contains(Data("SECRET".utf8).base64EncodedString()) && !post.contains("SECRET"))
    }

    /// A file named by a relative path with a colon (`notes:v2.txt`) is a file, whole: its
    /// upload is named `notes:v2.txt`, not `v2.txt` as the path of a URL of scheme "notes".
    @Test func aFileNameWithAColonIsAPathNotAURL() async throws {
        try TestServers.requireTus()
        let directory = try TempFiles.makeDirectory(prefix: "colon-name")
        defer { TempFiles.remove(directory) }
        try TempFiles.writeRandomFile(atPath: directory + "/notes:v2.txt", size: 10_000, seed: 5)
        let result = try await ToolProcess.execute(URL(fileURLWithPath: "/bin/sh"), [
            "-c", "cd \"$0\" && exec \"$1\" upload notes:v2.txt \"$2\"", directory, ToolProcess.blobstream().path,
            TestServers.tusFilesURL.absoluteString,
        ], environment: ["XDG_STATE_HOME": directory + "/state"])
        #expect(result.status == 0, "\(result.standardError)")
        let uploadURL = try #require(result.standardOutput.split(separator: "\n").last.flatMap { URL(string: String($0)) })
        defer { TestServers.removeUploads([uploadURL]) }
        #expect(try await TusClient(endpoint: TestServers.tusFilesURL).status(of: uploadURL).metadata["filename"] == "notes:v2.txt")
    }
}
