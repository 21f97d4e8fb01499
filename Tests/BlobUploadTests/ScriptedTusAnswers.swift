import BlobStream
import BlobUpload
import Foundation
import BlobTestSupport

/// Raw tus answers for a ``ScriptedHTTPServer``: a hostile or broken tus server in a few lines.
enum ScriptedTus {
    /// OPTIONS: tus 1.0.0 with creation and termination, no checksums.
    static let options = "HTTP/1.1 204 No Content\r\nTus-Resumable: 1.0.0\r\nTus-Version: 1.0.0\r\n"
        + "Tus-Extension: creation,termination\r\n\r\n"

    /// POST: the upload is at `location`.
    static func created(_ location: String) -> String {
        "HTTP/1.1 201 Created\r\nTus-Resumable: 1.0.0\r\nLocation: \(location)\r\nContent-Length: 0\r\n\r\n"
    }

    /// PATCH: the server claims to have `offset` bytes.
    static func patched(_ offset: Int64) -> String {
        "HTTP/1.1 204 No Content\r\nTus-Resumable: 1.0.0\r\nUpload-Offset: \(offset)\r\n\r\n"
    }

    /// HEAD: the server claims to have `offset` of `length` bytes.
    static func head(offset: Int64, length: Int64) -> String {
        "HTTP/1.1 200 OK\r\nTus-Resumable: 1.0.0\r\nUpload-Offset: \(offset)\r\nUpload-Length: \(length)\r\n"
            + "Cache-Control: no-store\r\nContent-Length: 0\r\n\r\n"
    }

    /// A PATCH lost a race (another client moved the offset): retried at once after a HEAD.
    static let conflict = "HTTP/1.1 409 Conflict\r\nTus-Resumable: 1.0.0\r\nContent-Length: 0\r\n\r\n"

    /// A redirect of any request to `location`.
    static func redirect(_ location: String) -> String {
        "HTTP/1.1 307 Temporary Redirect\r\nLocation: \(location)\r\nContent-Length: 0\r\n\r\n"
    }

    /// `count` bytes of a recognisable pattern, in memory.
    static func source(_ count: Int, name: String = "scripted") -> UploadSource {
        let bytes = Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        return .dataSource(name: name, length: Int64(count)) { MemoryDataSource(data: bytes, name: name) }
    }

    /// Options with `chunkSize` and no checksums, so the scripts need no digests.
    static func options(chunkSize: Int) -> TusUploadOptions {
        var options = TusUploadOptions()
        options.chunkSize = chunkSize
        options.checksum = .disabled
        options.retry.initialDelay = 0.01
        return options
    }

    /// The endpoint of `server`.
    static func endpoint(_ server: ScriptedHTTPServer) -> URL {
        URL(string: "http://127.0.0.1:\(server.port)/files/")!
    }
}
