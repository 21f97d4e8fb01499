import BlobStream
import Foundation

/// An S3 client for large uploads: a single `PutObject` below a threshold, else a multipart
/// upload with parts read and sent in parallel, each with a checksum computed while it is
/// read; resumable after a crash from its upload id. Plain `http:` endpoints, over the
/// package's own HTTP/1.1 client (see the README's S3 section).
///
/// ```swift
/// let client = try S3Client(configuration: .fromEnvironment(endpoint: endpoint, bucket: "media"))
/// let result = try await client.upload(.file(path: "/data/video.mp4"), key: "video.mp4") { event in
///     if case .created(let id) = event { save(id) }        // resume later with `resuming: id`
/// }
/// ```
public final class S3Client: Sendable {
    /// The configuration requests are made with.
    public let configuration: S3Configuration
    private let wire: S3Wire

    /// A client for `configuration`.
    /// - Throws: ``S3Error/unsupportedEndpoint(endpoint:reason:)`` for an endpoint that is not
    ///   `http:`, ``S3Error/invalidConfiguration(name:reason:)`` for an invalid bucket name.
    public init(configuration: S3Configuration) throws(S3Error) {
        self.configuration = configuration
        wire = try S3Wire(configuration: configuration)
    }

    /// Uploads `source` to `key`, or resumes the multipart upload `uploadID`.
    ///
    /// Resuming lists the parts the server has (`ListParts`), keeps each whose size, listed
    /// checksum and ETag (when it is the part's MD5) all match what the source now yields,
    /// sends the others, and completes. Cancelling the task stops its requests and closable
    /// source streams at once (a plain `InputStream` stops when its blocked read returns) and
    /// leaves a multipart upload resumable; ``abort(key:uploadID:)`` deletes it.
    /// - Throws: ``S3Error``; ``S3Error/cancelled(uploadID:)`` when the task is cancelled.
    public func upload(
        _ source: UploadSource, key: String, options: S3UploadOptions = S3UploadOptions(), resuming uploadID: String? = nil,
        events: @escaping @Sendable (S3UploadEvent) -> Void = { _ in }
    ) async throws(S3Error) -> S3UploadResult {
        let cancellation = S3Cancellation()
        let sink = S3EventSink(events)
        return try await Self.blocking(cancellation) { [wire] () throws(S3Error) -> S3UploadResult in
            try S3UploadRun(wire: wire, key: key, options: options, cancellation: cancellation, events: sink)
                .run(source, resuming: uploadID)
        }
    }

    /// Deletes the multipart upload `uploadID` and every part sent to it
    /// (`AbortMultipartUpload`).
    /// - Throws: ``S3Error/uploadGone(bucket:key:uploadID:)`` when there is no such upload.
    public func abort(key: String, uploadID: String) async throws(S3Error) {
        let cancellation = S3Cancellation()
        try await Self.blocking(cancellation) { [wire] () throws(S3Error) in
            let call = S3Call(operation: "AbortMultipartUpload", method: "DELETE", key: key, query: [("uploadId", uploadID)], uploadID: uploadID)
            let answer = try wire.send(call, body: nil, payloadHash: SigV4Signer.emptyPayload, cancellation: cancellation)
            guard (200..<300).contains(answer.statusCode) else { throw wire.failure(of: answer, for: call) }
        }
    }

    /// The parts the server has for the multipart upload `uploadID` (`ListParts`, every page).
    public func listParts(key: String, uploadID: String) async throws(S3Error) -> [S3ListedPart] {
        let cancellation = S3Cancellation()
        return try await Self.blocking(cancellation) { [wire] () throws(S3Error) -> [S3ListedPart] in
            try S3UploadRun(wire: wire, key: key, options: S3UploadOptions(), cancellation: cancellation, events: S3EventSink { _ in })
                .listParts(uploadID: uploadID).parts.map { S3ListedPart(number: $0.number, size: $0.size, eTag: $0.eTag) }
        }
    }

    /// Runs `body` on a thread of its own (it blocks in system calls), cancelling it with the
    /// calling task.
    private static func blocking<T: Sendable>(
        _ cancellation: S3Cancellation, _ body: @escaping @Sendable () throws(S3Error) -> T
    ) async throws(S3Error) -> T {
        try await withBlockingWork(at: .newThread("BlobUpload S3"), onCancel: cancellation.cancel) {
            Result { () throws(S3Error) -> T in try body() }
        }.get()
    }

    /// The ETag of a successful `PutObject` or `UploadPart` answer, after checking that a
    /// checksum the server computed itself (echoed in `x-amz-checksum-*`) is the one sent.
    static func acknowledged(
        _ answer: S3Answer, call: S3Call, bucket: String, checksum: S3ChecksumAlgorithm, sent: String
    ) throws(S3Error) -> String {
        guard let eTag = answer.head["etag"], !eTag.isEmpty else {
            throw .protocolViolation(bucket: bucket, key: call.key, operation: call.operation, reason: "the answer has no ETag")
        }
        if let echoed = answer.head[checksum.headerName], echoed != sent {
            throw .protocolViolation(
                bucket: bucket, key: call.key, operation: call.operation,
                reason: "the server computed the \(checksum) checksum \(echoed) but \(sent) was sent"
                    + (call.partNumber.map { " (part \($0))" } ?? ""))
        }
        return eTag
    }
}

/// A part the server has for a multipart upload.
public struct S3ListedPart: Sendable, Hashable {
    /// The part number, from 1.
    public var number: Int
    /// Its size in bytes.
    public var size: Int64
    /// Its ETag, as S3 gives it (with quotes).
    public var eTag: String
}
