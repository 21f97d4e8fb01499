import BlobStream
import Foundation

/// A multipart upload that was started and neither completed nor aborted, as
/// `ListMultipartUploads` reports it. Its parts are stored, and billed, until it is aborted.
public struct S3UnfinishedUpload: Sendable, Hashable {
    /// The key it would create.
    public var key: String
    /// Its upload id: what ``S3Client/upload(_:key:options:resuming:events:)`` resumes and
    /// ``S3Client/abort(key:uploadID:)`` deletes.
    public var uploadID: String
    /// When it was started (S3's `Initiated`).
    public var initiated: Date

    /// An upload's description.
    public init(key: String, uploadID: String, initiated: Date) {
        self.key = key
        self.uploadID = uploadID
        self.initiated = initiated
    }
}

/// Finding and deleting abandoned multipart uploads.
extension S3Client {
    /// The unfinished multipart uploads of the bucket whose key starts with `prefix`, every
    /// page of `ListMultipartUploads` (`pageSize` uploads per request, 1 to 1,000), in S3's
    /// order: by key, then by start.
    /// - Throws: ``S3Error``; ``S3Error/invalidConfiguration(name:reason:)`` for a `pageSize`
    ///   out of range; ``S3Error/protocolViolation(bucket:key:operation:reason:)`` for an
    ///   answer that is no listing, an upload without a key, id or valid start time, or a
    ///   truncated page that names no next page (or the same one again).
    public func listUnfinishedUploads(prefix: String = "", pageSize: Int = 1000) async throws(S3Error) -> [S3UnfinishedUpload] {
        guard (1...1000).contains(pageSize) else {
            throw .invalidConfiguration(name: "pageSize", reason: "\(pageSize) is not within 1 and 1000")
        }
        let cancellation = S3Cancellation()
        return try await Self.blocking(cancellation) { [wire] () throws(S3Error) -> [S3UnfinishedUpload] in
            let retry = S3Retry(options: S3UploadOptions(), bucket: wire.bucket, cancellation: cancellation, events: S3EventSink { _ in })
            return try Self.unfinishedUploads(prefix: prefix, pageSize: pageSize, wire: wire, retry: retry, cancellation: cancellation)
        }
    }

    /// ``listUnfinishedUploads(prefix:pageSize:)`` on the calling thread, with `retry`.
    static func unfinishedUploads(
        prefix: String, pageSize: Int, wire: S3Wire, retry: S3Retry, cancellation: S3Cancellation
    ) throws(S3Error) -> [S3UnfinishedUpload] {
        var uploads: [S3UnfinishedUpload] = []
        var marker: (key: String, uploadID: String)?
        while true {
            var query = [("uploads", ""), ("max-uploads", String(pageSize))]
            if !prefix.isEmpty { query.append(("prefix", prefix)) }
            if let marker { query += [("key-marker", marker.key), ("upload-id-marker", marker.uploadID)] }
            let call = S3Call(operation: "ListMultipartUploads", method: "GET", key: "", query: query)
            let page = try retry.run(key: prefix, uploadID: nil, partNumber: nil) { () throws(S3Error) -> S3XMLElement in
                let answer = try wire.send(call, body: nil, payloadHash: SigV4Signer.emptyPayload, cancellation: cancellation)
                guard (200..<300).contains(answer.statusCode) else { throw wire.failure(of: answer, for: call) }
                guard let root = S3XMLElement.parse(answer.body), root.name == "ListMultipartUploadsResult" else {
                    throw .protocolViolation(
                        bucket: wire.bucket, key: prefix, operation: call.operation, reason: "the answer is no ListMultipartUploadsResult")
                }
                return root
            }
            for element in page.all("Upload") {
                uploads.append(try Self.unfinishedUpload(element, bucket: wire.bucket, operation: call.operation))
            }
            guard page.value("IsTruncated") == "true" else { return uploads }
            guard let key = page.value("NextKeyMarker"), let id = page.value("NextUploadIdMarker"),
                  !key.isEmpty, marker.map({ $0 != (key, id) }) ?? true else {
                throw .protocolViolation(
                    bucket: wire.bucket, key: prefix, operation: call.operation,
                    reason: "a truncated page names no next page, or the same one again")
            }
            marker = (key, id)
        }
    }

    /// Aborts every unfinished multipart upload under `prefix` started before
    /// `initiatedBefore` (``listUnfinishedUploads(prefix:pageSize:)``, then
    /// ``abort(key:uploadID:)`` for each), reporting each one deleted to `aborted` as it goes.
    /// An upload that was finished or aborted by someone else meanwhile is skipped.
    /// - Returns: The uploads aborted.
    /// - Throws: ``S3Error`` for the first failure, after which no more are aborted.
    @discardableResult
    public func abortUnfinishedUploads(
        prefix: String = "", initiatedBefore cutoff: Date, aborted: @escaping @Sendable (S3UnfinishedUpload) -> Void = { _ in }
    ) async throws(S3Error) -> [S3UnfinishedUpload] {
        try await abortUnfinishedUploads(listUnfinishedUploads(prefix: prefix), initiatedBefore: cutoff, aborted: aborted)
    }

    /// ``abortUnfinishedUploads(prefix:initiatedBefore:aborted:)`` for `uploads` already listed
    /// (by ``listUnfinishedUploads(prefix:pageSize:)``): those started before `initiatedBefore`.
    @discardableResult
    public func abortUnfinishedUploads(
        _ uploads: [S3UnfinishedUpload], initiatedBefore cutoff: Date,
        aborted: @escaping @Sendable (S3UnfinishedUpload) -> Void = { _ in }
    ) async throws(S3Error) -> [S3UnfinishedUpload] {
        var done: [S3UnfinishedUpload] = []
        for upload in uploads where upload.initiated < cutoff {
            do {
                try await abort(key: upload.key, uploadID: upload.uploadID)
            } catch .uploadGone {
                continue
            }
            done.append(upload)
            aborted(upload)
        }
        return done
    }

    private static func unfinishedUpload(_ element: S3XMLElement, bucket: String, operation: String) throws(S3Error) -> S3UnfinishedUpload {
        guard let key = element.value("Key"), !key.isEmpty, let id = element.value("UploadId"), !id.isEmpty,
              let text = element.value("Initiated"), let initiated = parseTimestamp(text) else {
            throw .protocolViolation(
                bucket: bucket, key: element.value("Key") ?? "", operation: operation,
                reason: "an Upload lacks a Key, an UploadId or an ISO 8601 Initiated time")
        }
        return S3UnfinishedUpload(key: key, uploadID: id, initiated: initiated)
    }

    /// An ISO 8601 time as S3 writes it (`2026-11-26T13:00:00.000Z`), with or without
    /// fractional seconds.
    static func parseTimestamp(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }
}
