import BlobUpload
import Foundation

/// `blobstream s3 abort`: deletes a multipart upload and its parts.
enum S3AbortCommand: Command {
    static let words = ["s3", "abort"]
    static let summary = "delete an unfinished S3 multipart upload and its parts"
    static let valueOptions: Set<String> = ["--endpoint", TLSOption.name]
    static let flagOptions: Set<String> = []

    static var help: String {
        """
        usage: blobstream s3 abort [--endpoint URL] s3://bucket/key UPLOAD_ID

        Deletes the multipart upload UPLOAD_ID of s3://bucket/key (AbortMultipartUpload) and
        every part sent to it; it can no longer be resumed. Credentials, region and endpoint
        are found as for 's3 cp'.

        Options:
              --endpoint URL   the S3 endpoint (default: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL)
              --cacert FILE    trust only these CA certificates (PEM) for https: (default: the system's, or SSL_CERT_FILE)
          -h, --help           show this help

        Exit status: 0 when the upload was deleted, 1 on failure (an upload that does not
        exist included), 64 for a wrong command line.

        """
    }

    static func run(_ arguments: ParsedArguments, console: Console) throws(CommandFailure) -> Int32 {
        guard arguments.positional.count == 2, !arguments.positional[1].isEmpty else {
            throw .usage("expected s3://bucket/key and UPLOAD_ID")
        }
        let (bucket, key) = try S3Support.target(arguments.positional[0])
        let uploadID = arguments.positional[1]
        let client = try S3Support.client(bucket: bucket, arguments: arguments)
        let outcome = UploadSupport.run { () async throws(S3Error) in
            try await client.abort(key: key, uploadID: uploadID)
        }
        if case .failure(let error) = outcome.result {
            if let status = outcome.interruption.exitStatus { return status }
            throw .runtime(S3Support.message(error, subject: "s3://\(bucket)/\(key)"))
        }
        return ExitStatus.success
    }
}
