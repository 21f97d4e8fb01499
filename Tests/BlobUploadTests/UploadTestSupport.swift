import BlobStream
import BlobTestSupport
import BlobUpload
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
import SystemCalls
#endif

/// Collects events from any thread.
final class EventLog<Event: Sendable>: Sendable {
    private let events = LockedValue<[Event]>([])
    func append(_ event: Event) { events.withLock { $0.append(event) } }
    var all: [Event] { events.withLock { $0 } }
}

extension EventLog where Event == TusUploadEvent {
    /// The upload URLs announced with `.created`, in order.
    var createdURLs: [URL] {
        all.compactMap { if case .created(let url) = $0 { url } else { nil } }
    }

    /// The errors of the `.retrying` events, in order.
    var retriedErrors: [BlobUploadError] {
        all.compactMap { if case .retrying(_, _, let error) = $0 { error } else { nil } }
    }

    /// The confirmed byte counts of the `.progress` events, in order.
    var confirmedOffsets: [Int64] {
        all.compactMap { if case .progress(let progress) = $0 { progress.completedBytes } else { nil } }
    }
}

/// A scratch file of `size` pseudo-random bytes; remove it with
/// `defer { TempFiles.remove(path) }` right after this call.
func makeRandomFile(size: Int, seed: UInt64 = 1) throws -> String {
    try TempFiles.makeRandomFile(prefix: "blobupload", size: size, seed: seed)
}

/// Whether the tus server's copy of the upload at `uploadURL` has the SHA-256 of the file at
/// `path` (both digests by `sha256sum`, independent of the code under test).
func tusStoredCopyMatches(_ uploadURL: URL, file path: String, dataRoot: String = TestServers.tusDataRoot) throws -> Bool {
    let stored = dataRoot + "/" + uploadURL.lastPathComponent
    return try TempFiles.sha256(ofFileAtPath: stored) == TempFiles.sha256(ofFileAtPath: path)
}

/// Sends one raw tus PATCH from outside the client under test and returns the status: a
/// second client that moves the server's offset behind the first one's back.
func sendRawPatch(_ body: Data, at offset: Int64, to uploadURL: URL) async throws -> Int? {
    var request = URLRequest(url: uploadURL)
    request.httpMethod = "PATCH"
    request.setValue("1.0.0", forHTTPHeaderField: "Tus-Resumable")
    request.setValue("application/offset+octet-stream", forHTTPHeaderField: "Content-Type")
    request.setValue(String(offset), forHTTPHeaderField: "Upload-Offset")
    let session = URLSession(configuration: .ephemeral)
    defer { session.finishTasksAndInvalidate() }
    let (_, response) = try await session.upload(for: request, from: body)
    return (response as? HTTPURLResponse)?.statusCode
}

/// Deletes an upload from outside the client under test and returns the status.
func deleteUpload(_ uploadURL: URL) async throws -> Int? {
    var request = URLRequest(url: uploadURL)
    request.httpMethod = "DELETE"
    request.setValue("1.0.0", forHTTPHeaderField: "Tus-Resumable")
    let session = URLSession(configuration: .ephemeral)
    defer { session.finishTasksAndInvalidate() }
    let (_, response) = try await session.data(for: request)
    return (response as? HTTPURLResponse)?.statusCode
}
