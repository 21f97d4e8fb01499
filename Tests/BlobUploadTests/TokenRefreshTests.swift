import BlobStream
import BlobTestSupport
import BlobUpload
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// A real tus server (a private tuspyserver) behind bearer tokens that expire every few
/// requests (Scripts/tus_token_middleware.py): the upload completes through the header
/// provider, which fetches a new token when a request is refused, and fails without it.
@Suite struct TokenRefreshTests {
    @Test func aTokenThatExpiresMidUploadIsRenewedThroughTheProvider() async throws {
        let server = try await TusServerProcess.start(tokenUses: 3)
        defer { server.stop() }
        let size = 3 << 20
        let path = try makeRandomFile(size: size, seed: 71)
        defer { TempFiles.remove(path) }
        let tokens = TokenSource(server: server)
        let client = TusClient(endpoint: server.filesURL, headerProvider: { request in
            ["Authorization": "Bearer " + (await tokens.token(renewing: request.refusedStatus != nil))]
        })
        var options = TusUploadOptions()
        options.chunkSize = 256 << 10

        let result = try await client.upload(.file(path: path), options: options)

        #expect(result.length == Int64(size))
        #expect(result.retries == 0, "a renewed token is no failure of the upload")
        #expect(try tusStoredCopyMatches(result.uploadURL, file: path, dataRoot: server.dataDirectory))
        let stats = try await tokens.stats()
        // 12 PATCHes, a POST and an OPTIONS, 3 requests per token: the token expired mid-upload
        // again and again, and every refusal was answered with a renewal.
        #expect(stats.refused >= 4)
        #expect(await tokens.renewals == stats.refused)
    }

    @Test func withoutAProviderTheExpiredTokenFailsTheUpload() async throws {
        let server = try await TusServerProcess.start(tokenUses: 3)
        defer { server.stop() }
        let path = try makeRandomFile(size: 2 << 20, seed: 72)
        defer { TempFiles.remove(path) }
        let token = await TokenSource(server: server).token(renewing: false)
        let client = TusClient(endpoint: server.filesURL, headers: ["Authorization": "Bearer " + token])
        var options = TusUploadOptions()
        options.chunkSize = 256 << 10

        await #expect {
            _ = try await client.upload(.file(path: path), options: options)
        } throws: { error in
            guard case BlobUploadError.httpStatus(_, _, 401, _) = error else { return false }
            return true
        }
    }

    @Test func aSecondRefusalIsTheAnswerAndTheProviderIsAskedOnceMore() async throws {
        let server = try await TusServerProcess.start(tokenUses: 3)
        defer { server.stop() }
        let asked = EventLog<HeaderRequest>()
        let client = TusClient(endpoint: server.filesURL, headerProvider: { request in
            asked.append(request)
            return ["Authorization": "Bearer not-a-token"]
        })

        await #expect {
            _ = try await client.create(length: 10, metadata: ["filename": "x"])
        } throws: { error in
            guard case BlobUploadError.httpStatus("POST", _, 401, _) = error else { return false }
            return true
        }
        #expect(asked.all.map(\.refusedStatus) == [nil, 401])
        #expect(asked.all.allSatisfy { $0.method == "POST" && $0.url == server.filesURL })
    }

    @Test func theProviderMayNotSetTheProtocolsFields() async throws {
        let server = try await TusServerProcess.start(tokenUses: 3)
        defer { server.stop() }
        let client = TusClient(endpoint: server.filesURL, headerProvider: { _ in ["Upload-Offset": "0"] })
        await #expect(throws: BlobUploadError.invalidHeader(
            name: "Upload-Offset", reason: "the header provider may not set it: the tus protocol does")) {
            _ = try await client.create(length: 10, metadata: ["filename": "x"])
        }
        #expect(try await TokenSource(server: server).stats().refused == 0, "nothing was sent")
    }
}

/// Bearer tokens from the test server's `GET /token`: one kept until a refusal asks for a
/// new one, as an app's token cache would.
actor TokenSource {
    private let server: TusServerProcess
    private var current: String?
    private(set) var renewals = 0

    init(server: TusServerProcess) {
        self.server = server
    }

    func token(renewing: Bool) async -> String {
        if renewing { renewals += 1 }
        if let current, !renewing { return current }
        let fresh = (try? await fetch("token")) ?? "unavailable"
        current = fresh
        return fresh
    }

    /// Tokens issued and requests refused, as the server counted them.
    func stats() async throws -> (issued: Int, refused: Int) {
        let text = try await fetch("token-stats")
        let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Int]
        return (object?["issued"] ?? -1, object?["refused"] ?? -1)
    }

    private func fetch(_ path: String) async throws -> String {
        let url = URL(string: "http://127.0.0.1:\(server.port)/\(path)")!
        let data: Data = try await withCheckedThrowingContinuation { continuation in
            URLSession.shared.dataTask(with: url) { data, _, error in
                if let data { continuation.resume(returning: data) } else { continuation.resume(throwing: error ?? URLError(.badServerResponse)) }
            }.resume()
        }
        return String(decoding: data, as: UTF8.self)
    }
}
