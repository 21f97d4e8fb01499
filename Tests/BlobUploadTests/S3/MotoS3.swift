import BlobTestSupport
@testable import BlobUpload
import Foundation

/// The moto S3 server of `Scripts/test-servers.sh`, and what tests check on it with boto3 —
/// independently of the client under test.
enum MotoS3 {
    static let credentials = S3Credentials(accessKeyID: "testing-access-key", secretAccessKey: "testing-secret-key")

    /// A client for a fresh bucket, and the bucket's name; remove it with ``removeBucket(_:)``.
    static func makeBucket(endpoint: URL = TestServers.motoURL) throws -> (client: S3Client, bucket: String) {
        try TestServers.requireMoto()
        let bucket = "bs-" + UUID().uuidString.lowercased().prefix(18)
        _ = try boto("s3.create_bucket(Bucket=sys.argv[1])", [bucket])
        let client = try S3Client(configuration: S3Configuration(endpoint: endpoint, bucket: bucket, credentials: credentials))
        return (client, bucket)
    }

    /// Deletes every object, multipart upload and then the bucket.
    static func removeBucket(_ bucket: String) {
        _ = try? boto("""
            for o in s3.list_objects_v2(Bucket=sys.argv[1]).get("Contents", []): s3.delete_object(Bucket=sys.argv[1], Key=o["Key"])
            for u in s3.list_multipart_uploads(Bucket=sys.argv[1]).get("Uploads", []):
                s3.abort_multipart_upload(Bucket=sys.argv[1], Key=u["Key"], UploadId=u["UploadId"])
            s3.delete_bucket(Bucket=sys.argv[1])
            """, [bucket])
    }

    /// The SHA-256 (hex) of the object as boto3 downloads it.
    static func sha256(bucket: String, key: String) throws -> String {
        try boto("""
            import hashlib
            body = s3.get_object(Bucket=sys.argv[1], Key=sys.argv[2])["Body"]
            h = hashlib.sha256()
            for chunk in iter(lambda: body.read(1 << 20), b""): h.update(chunk)
            print(h.hexdigest())
            """, [bucket, key])
    }

    /// The multipart uploads in progress in `bucket`, as boto3 lists them.
    static func uploadIDs(bucket: String) throws -> [String] {
        try boto("""
            for u in s3.list_multipart_uploads(Bucket=sys.argv[1]).get("Uploads", []): print(u["UploadId"])
            """, [bucket]).split(separator: "\n").map(String.init)
    }

    /// Runs `code` with `s3`, a boto3 client of moto, and `sys` in scope.
    static func boto(_ code: String, _ arguments: [String]) throws -> String {
        let program = """
            import sys, boto3
            s3 = boto3.client("s3", endpoint_url="\(TestServers.motoURL.absoluteString)", region_name="us-east-1",
                              aws_access_key_id="testing", aws_secret_access_key="testing")
            """ + "\n" + code
        return try PythonTool.program(program, arguments)
    }
}
