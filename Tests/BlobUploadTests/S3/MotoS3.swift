import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation

/// The moto S3 server of `Scripts/test-servers.sh`: fresh buckets, and the checks tests make
/// on what was stored. Objects are read back with the package's HTTP source and hashed. boto3
/// would be more independent, but it takes seconds to start on a loaded machine; the bytes on
/// the wire are checked against Python's own checksums by ``RecordingProxy`` instead.
enum MotoS3 {
    static let credentials = S3Credentials(accessKeyID: "testing-access-key", secretAccessKey: "testing-secret-key")

    /// A client for a fresh bucket, and the bucket's name; remove it with ``removeBucket(_:)``.
    static func makeBucket(endpoint: URL = TestServers.motoURL, trust: TLSTrust = .system) throws -> (client: S3Client, bucket: String) {
        try TestServers.requireMoto()
        let bucket = "bs-" + UUID().uuidString.lowercased().prefix(18)
        _ = try request("CreateBucket", "PUT", bucket: bucket)
        let client = try S3Client(configuration: S3Configuration(endpoint: endpoint, bucket: bucket, credentials: credentials, trust: trust))
        return (client, bucket)
    }

    /// Deletes every object and multipart upload, then the bucket.
    static func removeBucket(_ bucket: String) {
        if let list = try? request("ListObjectsV2", "GET", bucket: bucket, query: [("list-type", "2")]) {
            for item in list.all("Contents") {
                _ = try? request("DeleteObject", "DELETE", bucket: bucket, key: item.value("Key") ?? "")
            }
        }
        for (key, id) in (try? uploads(bucket: bucket)) ?? [] {
            _ = try? request("AbortMultipartUpload", "DELETE", bucket: bucket, key: key, query: [("uploadId", id)])
        }
        _ = try? request("DeleteBucket", "DELETE", bucket: bucket)
    }

    /// The SHA-256 (hex) of the object as the package's HTTP source downloads it, with a
    /// signed GetObject (the source's `Range` field is not signed, as S3 allows).
    static func sha256(bucket: String, key: String) throws -> String {
        let path = "/\(bucket)/" + S3URLEncoding.encode(key, keepingSlash: true)
        let url = URL(string: TestServers.motoURL.absoluteString + path)!
        let signed = SigV4Signer(credentials: credentials, region: "us-east-1").sign(
            method: "GET", path: path, query: "", host: "127.0.0.1:\(TestServers.motoPort)", fields: [],
            payloadHash: SigV4Signer.emptyPayload, date: Date())
        let headers = Dictionary(signed.fields, uniquingKeysWith: { $1 })
        let stream = BlobInputStream(dataSource: HTTPDataSource(url: url, configuration: .init(headers: headers)))
        stream.open()
        defer { stream.close() }
        var checksum = SHA256()
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let count = stream.read(&buffer, maxLength: buffer.count)
            if count == 0 { break }
            guard count > 0 else { throw TestSupportError("GET \(url): \(String(describing: stream.streamError))") }
            buffer.withUnsafeBytes { checksum.update(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
        }
        return checksum.finalize().hex
    }

    /// The object's length, from a HeadObject (the HTTP source's `Range: bytes=0-` is answered
    /// 416 for an empty object).
    static func length(bucket: String, key: String) throws -> Int64? {
        let wire = try S3Wire(configuration: S3Configuration(endpoint: TestServers.motoURL, bucket: bucket, credentials: credentials))
        let call = S3Call(operation: "HeadObject", method: "HEAD", key: key)
        let answer = try wire.send(call, body: nil, payloadHash: SigV4Signer.emptyPayload, cancellation: S3Cancellation())
        guard answer.statusCode == 200 else { throw wire.failure(of: answer, for: call) }
        return answer.head.contentLength
    }

    /// The multipart uploads in progress in `bucket`.
    static func uploadIDs(bucket: String) throws -> [String] {
        try uploads(bucket: bucket).map(\.id)
    }

    private static func uploads(bucket: String) throws -> [(key: String, id: String)] {
        try request("ListMultipartUploads", "GET", bucket: bucket, query: [("uploads", "")]).all("Upload").map {
            ($0.value("Key") ?? "", $0.value("UploadId") ?? "")
        }
    }

    /// Sends one signed request for `bucket` (and `key`) and returns its XML answer's root.
    @discardableResult
    private static func request(
        _ operation: String, _ method: String, bucket: String, key: String = "", query: [(String, String)] = []
    ) throws -> S3XMLElement {
        let wire = try S3Wire(configuration: S3Configuration(endpoint: TestServers.motoURL, bucket: bucket, credentials: credentials))
        let call = S3Call(operation: operation, method: method, key: key, query: query)
        let answer = try wire.send(call, body: nil, payloadHash: SigV4Signer.emptyPayload, cancellation: S3Cancellation())
        guard (200..<300).contains(answer.statusCode) else { throw wire.failure(of: answer, for: call) }
        return S3XMLElement.parse(answer.body) ?? S3XMLElement(name: "")
    }
}

extension S3Client {
    /// Uploads the file at `path` to `key` and cancels the upload once part `number` is
    /// uploaded (with one part in flight, the parts before it are on the server): the id of the
    /// multipart upload it leaves unfinished.
    func uploadCancelled(afterPart number: Int, path: String, key: String, options: S3UploadOptions) async throws -> String {
        let created = Locked<String?>(nil)
        let cancel = Locked<(@Sendable () -> Void)?>(nil)
        let task = Task {
            while cancel.value == nil { try await Task.sleep(nanoseconds: 1_000_000) }
            return try await upload(.file(path: path), key: key, options: options) { event in
                if case .created(let id) = event { created.value = id }
                if case .partUploaded(number, _) = event { cancel.value?() }
            }
        }
        cancel.value = { task.cancel() }
        _ = await task.result
        guard let id = created.value else { throw TestSupportError("the cancelled upload of \(key) created no upload") }
        return id
    }
}

/// A journaled multipart upload of a random file to moto, cancelled once its first part was
/// uploaded: what the journal tests continue, start over or abandon. ``remove()`` deletes the
/// bucket, the file and the journal.
struct CancelledJournaledUpload {
    let client: S3Client
    let bucket: String
    let path: String
    let directory: String
    /// Parts of `partSize`, one at a time, with the journal; change them for the second run.
    let options: S3UploadOptions
    /// The upload the cancelled run left.
    let uploadID: String

    init(size: Int, seed: UInt64, key: String, partSize: Int = 5 << 20, checksum: S3ChecksumAlgorithm = .crc32c) async throws {
        (client, bucket) = try MotoS3.makeBucket()
        path = try makeRandomFile(size: size, seed: seed)
        directory = try TempFiles.makeDirectory(prefix: "journal-\(seed)")
        var options = S3UploadOptions()
        options.partSize = partSize
        options.parallelParts = 1
        options.checksum = checksum
        options.journal = FileUploadJournal(directory: directory)
        self.options = options
        uploadID = try await client.uploadCancelled(afterPart: 1, path: path, key: key, options: options)
    }

    func remove() {
        MotoS3.removeBucket(bucket)
        TempFiles.remove(path)
        TempFiles.remove(directory)
    }
}
