import BlobTestSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// A private tus server keeps its uploads across a graceful restart and a crash, and its
/// checksum middleware rejects a corrupted PATCH without storing it.
@Suite struct TusServerProcessTests {
    /// One tus request on a fresh connection; the status and response headers.
    private func tus(_ method: String, _ url: URL, headers: [String: String] = [:], body: [UInt8]? = nil)
        async throws -> (status: Int, headers: [AnyHashable: Any])
    {
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.setValue("1.0.0", forHTTPHeaderField: "Tus-Resumable")
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        let (_, response) =
            if let body { try await session.upload(for: request, from: Data(body)) } else { try await session.data(for: request) }
        let http = try #require(response as? HTTPURLResponse)
        return (http.statusCode, http.allHeaderFields)
    }

    private func patch(_ url: URL, offset: Int, _ bytes: ArraySlice<UInt8>, checksum: String? = nil) async throws -> Int {
        var headers = ["Content-Type": "application/offset+octet-stream", "Upload-Offset": String(offset)]
        headers["Upload-Checksum"] = checksum
        return try await tus("PATCH", url, headers: headers, body: Array(bytes)).status
    }

    private func offset(_ url: URL) async throws -> String? {
        let reply = try await tus("HEAD", url)
        return reply.headers.first { ($0.key as? String)?.lowercased() == "upload-offset" }?.value as? String
    }

    @Test func keepsUploadsAcrossRestartAndCrash() async throws {
        try TestServers.requireTus()
        let server = try await TusServerProcess.start(verifiesChecksums: true)
        defer { server.stop() }
        let bytes = TempFiles.pseudoRandomBytes(count: 300_000, seed: 11)
        let metadata = "filename \(Data("blob.bin".utf8).base64EncodedString()),filetype \(Data("application/octet-stream".utf8).base64EncodedString())"

        let created = try await tus("POST", server.filesURL, headers: ["Upload-Length": "300000", "Upload-Metadata": metadata])
        #expect(created.status == 201)
        let location = try #require(created.headers.first { ($0.key as? String)?.lowercased() == "location" }?.value as? String)
        let upload = try #require(URL(string: location))
        #expect(upload.port == Int(server.port))
        #expect(try await patch(upload, offset: 0, bytes[0..<100_000]) == 204)

        try await server.restartOffThePool()
        #expect(try await offset(upload) == "100000")
        try await server.crashAndRestartOffThePool()
        #expect(try await offset(upload) == "100000")

        let wrong = "sha1 " + Data(repeating: 0, count: 20).base64EncodedString()
        #expect(try await patch(upload, offset: 100_000, bytes[100_000...], checksum: wrong) == 460)
        #expect(try await offset(upload) == "100000")
        let right = try "sha256 " + Data(hex: TempFiles.sha256(of: bytes[100_000...])).base64EncodedString()
        #expect(try await patch(upload, offset: 100_000, bytes[100_000...], checksum: right) == 204)
        #expect(try await offset(upload) == "300000")
        #expect(FileManager.default.contents(atPath: server.dataDirectory + "/" + upload.lastPathComponent) == Data(bytes))
    }
}

private extension Data {
    init(hex: String) {
        var bytes = [UInt8]()
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            bytes.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        self.init(bytes)
    }
}
