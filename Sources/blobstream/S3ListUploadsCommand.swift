import BlobUpload
import Foundation

/// `blobstream s3 ls-uploads`: the unfinished multipart uploads of a bucket.
enum S3ListUploadsCommand: Command {
    static let words = ["s3", "ls-uploads"]
    static let summary = "list unfinished S3 multipart uploads (they are billed until aborted)"
    static let valueOptions: Set<String> = ["--endpoint", TLSOption.name]
    static let flagOptions: Set<String> = []

    static var help: String {
        """
        usage: blobstream s3 ls-uploads [--endpoint URL] s3://bucket[/prefix]

        Lists the multipart uploads of the bucket (whose keys start with prefix) that were
        started and neither completed nor aborted (ListMultipartUploads, every page): one line
        each, "STARTED UPLOAD_ID s3://bucket/key", separated by tabs, STARTED in UTC (ISO 8601).
        Their parts are stored, and billed, until 's3 abort' deletes them; 's3 cp --resume
        UPLOAD_ID' continues one. Credentials, region and endpoint are found as for 's3 cp'.

        Options:
              --endpoint URL   the S3 endpoint (default: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL)
              --cacert FILE    trust only these CA certificates (PEM) for https: (default: the system's, or SSL_CERT_FILE)
          -h, --help           show this help

        Exit status: 0 when listed (none is no error), 1 on failure, 64 for a wrong command line,
        130 (Ctrl-C) or 143 (SIGTERM) when interrupted (nothing is listed then).

        """
    }

    static func run(_ arguments: ParsedArguments, console: Console) throws(CommandFailure) -> Int32 {
        guard arguments.positional.count == 1 else { throw .usage("expected s3://bucket[/prefix]") }
        let (bucket, prefix) = try S3Support.location(arguments.positional[0])
        let client = try S3Support.client(bucket: bucket, arguments: arguments)
        let outcome = UploadSupport.run { () async throws(S3Error) -> [S3UnfinishedUpload] in
            try await client.listUnfinishedUploads(prefix: prefix)
        }
        switch outcome.result {
        case .success(let uploads):
            for upload in uploads {
                console.output("\(S3Support.timestamp(upload.initiated))\t\(upload.uploadID)\ts3://\(bucket)/\(upload.key)\n")
            }
            return ExitStatus.success
        case .failure(let error):
            if let status = outcome.interruption.exitStatus {
                console.error("s3://\(bucket)/\(prefix): listing \(outcome.interruption.signalName); nothing listed")
                return status
            }
            throw .runtime(S3Support.message(error, subject: "s3://\(bucket)/\(prefix)"))
        }
    }
}
