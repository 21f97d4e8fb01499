import BlobUpload
import Foundation
internal import SystemCalls

/// `blobstream s3 abort`: deletes a multipart upload and its parts, or every unfinished one
/// older than an age.
enum S3AbortCommand: Command {
    static let words = ["s3", "abort"]
    static let summary = "delete unfinished S3 multipart uploads and their parts"
    static let valueOptions: Set<String> = ["--endpoint", "--older-than", TLSOption.name]
    static let flagOptions: Set<String> = []

    static var help: String {
        """
        usage: blobstream s3 abort [--endpoint URL] s3://bucket/key UPLOAD_ID
               blobstream s3 abort [--endpoint URL] --older-than AGE s3://bucket[/prefix]

        Deletes the multipart upload UPLOAD_ID of s3://bucket/key (AbortMultipartUpload) and
        every part sent to it; it can no longer be resumed. With --older-than, deletes every
        unfinished multipart upload of the bucket (whose key starts with prefix) started more
        than AGE ago, as 's3 ls-uploads' lists them, printing one line for each:
        "aborted STARTED UPLOAD_ID s3://bucket/key", then how many were aborted and kept.
        Credentials, region and endpoint are found as for 's3 cp'.

        Options:
              --endpoint URL     the S3 endpoint (default: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL)
              --older-than AGE   a number with s, m, h, d or w (seconds to weeks): 7d, 36h
              --cacert FILE      trust only these CA certificates (PEM) for https: (default: the system's, or SSL_CERT_FILE)
          -h, --help             show this help

        Exit status: 0 when the upload was deleted (with --older-than: when every upload of that
        age was, none included), 1 on failure (an upload that does not exist included), 64 for a
        wrong command line, 130 (Ctrl-C) or 143 (SIGTERM) when interrupted (the message says
        what was deleted by then).

        """
    }

    static func run(_ arguments: ParsedArguments, console: Console) throws(CommandFailure) -> Int32 {
        if let age = arguments.values["--older-than"] {
            return try abortOlder(than: parseAge(age), arguments: arguments, console: console)
        }
        guard arguments.positional.count == 2, !arguments.positional[1].isEmpty else {
            throw .usage("expected s3://bucket/key and UPLOAD_ID (or --older-than AGE and s3://bucket[/prefix])")
        }
        let (bucket, key) = try S3Support.target(arguments.positional[0])
        let uploadID = arguments.positional[1]
        let client = try S3Support.client(bucket: bucket, arguments: arguments)
        let outcome = UploadSupport.run { () async throws(S3Error) in
            try await client.abort(key: key, uploadID: uploadID)
        }
        if case .failure(let error) = outcome.result {
            if let status = outcome.interruption.exitStatus {
                console.error("s3://\(bucket)/\(key): \(outcome.interruption.signalName) while aborting \(uploadID), which may or "
                    + "may not be deleted: run the command again ('s3 ls-uploads' lists what remains)")
                return status
            }
            // The library's advice (start a new upload) is for an upload that was to go on.
            if case .uploadGone = error {
                throw .runtime("s3://\(bucket)/\(key): the multipart upload \(uploadID) is gone (NoSuchUpload): it was "
                    + "completed, aborted or expired, so there is nothing to abort; 'blobstream s3 ls-uploads' lists those that remain")
            }
            throw .runtime(S3Support.message(error, subject: "s3://\(bucket)/\(key)"))
        }
        return ExitStatus.success
    }

    /// `--older-than`: every unfinished upload under the location started more than `age`
    /// seconds ago, each announced as it is deleted.
    private static func abortOlder(than age: TimeInterval, arguments: ParsedArguments, console: Console) throws(CommandFailure) -> Int32 {
        guard arguments.positional.count == 1 else { throw .usage("--older-than takes one s3://bucket[/prefix] and no upload id") }
        let (bucket, prefix) = try S3Support.location(arguments.positional[0])
        let client = try S3Support.client(bucket: bucket, arguments: arguments)
        let cutoff = Date(timeIntervalSinceNow: -age)
        let abortedSoFar = LockedValue(0)
        let outcome = UploadSupport.run { () async throws(S3Error) -> (aborted: Int, kept: Int) in
            let all = try await client.listUnfinishedUploads(prefix: prefix)
            let aborted = try await client.abortUnfinishedUploads(all, initiatedBefore: cutoff) { upload in
                abortedSoFar.withLock { $0 += 1 }
                console.output("aborted \(S3Support.timestamp(upload.initiated))\t\(upload.uploadID)\ts3://\(bucket)/\(upload.key)\n")
            }
            return (aborted.count, all.count { $0.initiated >= cutoff })
        }
        let location = "s3://\(bucket)/\(prefix)"
        switch outcome.result {
        case .success(let (aborted, kept)):
            console.output("aborted \(aborted) unfinished upload\(aborted == 1 ? "" : "s") under \(location); "
                + "\(kept) newer kept\n")
            return ExitStatus.success
        case .failure(let error):
            if let status = outcome.interruption.exitStatus {
                let count = abortedSoFar.withLock { $0 }
                console.error("\(location): \(outcome.interruption.signalName) after aborting \(count) unfinished "
                    + "upload\(count == 1 ? "" : "s") (listed above); run the command again for the rest")
                return status
            }
            throw .runtime(S3Support.message(error, subject: location))
        }
    }

    /// `7d`, `36h`, `90m`, `30s`, `2w` in seconds.
    static func parseAge(_ text: String) throws(CommandFailure) -> TimeInterval {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800]
        guard let unit = text.last.flatMap({ units[$0] }), text.count > 1,
              text.dropLast().allSatisfy({ $0.isASCII && $0.isNumber }), let number = Double(text.dropLast()),
              number * unit <= 100 * 365 * 86_400 else {
            throw .usage("--older-than takes a whole number with s, m, h, d or w (7d, 36h), not '\(text)'")
        }
        return number * unit
    }
}
