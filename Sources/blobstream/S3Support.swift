import BlobStream
import BlobUpload
import Foundation

/// What `s3 cp` and `s3 abort` share: the `s3://bucket/key` argument, the endpoint and
/// credentials, running the client's asynchronous calls from the command line, and messages.
enum S3Support {
    /// `--endpoint`, else `AWS_ENDPOINT_URL_S3`, else `AWS_ENDPOINT_URL`.
    static let endpointVariables = ["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"]

    /// The bucket and key of `s3://bucket/key`.
    static func target(_ text: String) throws(CommandFailure) -> (bucket: String, key: String) {
        guard text.hasPrefix("s3://") else { throw .usage("'\(text)' is not an s3://bucket/key URL") }
        let rest = text.dropFirst(5)
        guard let slash = rest.firstIndex(of: "/"), slash != rest.startIndex, rest.index(after: slash) != rest.endIndex else {
            throw .usage("'\(text)' names no bucket and key (s3://bucket/key)")
        }
        return (String(rest[..<slash]), String(rest[rest.index(after: slash)...]))
    }

    /// The bucket and key prefix (empty for the whole bucket) of `s3://bucket[/prefix]`.
    static func location(_ text: String) throws(CommandFailure) -> (bucket: String, prefix: String) {
        guard text.hasPrefix("s3://") else { throw .usage("'\(text)' is not an s3://bucket[/prefix] URL") }
        let rest = text.dropFirst(5)
        let bucket = rest.prefix { $0 != "/" }
        guard !bucket.isEmpty else { throw .usage("'\(text)' names no bucket (s3://bucket[/prefix])") }
        return (String(bucket), String(rest.dropFirst(bucket.count + 1)))
    }

    /// The time S3 gives, in UTC to the second, for listings.
    static func timestamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }

    /// A client for `bucket`, with the endpoint from `--endpoint` or the environment and the
    /// credentials and region from the environment.
    static func client(bucket: String, arguments: ParsedArguments) throws(CommandFailure) -> S3Client {
        let environment = ProcessInfo.processInfo.environment
        guard let text = arguments.values["--endpoint"] ?? endpointVariables.lazy.compactMap({ environment[$0] }).first(where: { !$0.isEmpty }) else {
            throw .usage("no S3 endpoint: give --endpoint https://HOST[:PORT] (or set AWS_ENDPOINT_URL)")
        }
        let endpoint = try HTTPURLArgument.parse(text, role: "an S3 endpoint (--endpoint)")
        let trust = try TLSOption.trust(arguments)
        let rateLimit = try RateLimitOption.limit(arguments)
        do throws(S3Error) {
            var configuration = try S3Configuration.fromEnvironment(endpoint: endpoint, bucket: bucket)
            configuration.trust = trust
            configuration.rateLimit = rateLimit
            return try S3Client(configuration: configuration)
        } catch {
            switch error {
            case .unsupportedEndpoint, .invalidConfiguration: throw .usage(error.description)
            default: throw .runtime(message(error))
            }
        }
    }

    /// The line for `error`: transfer errors as every command words them, S3's own as
    /// ``S3Error/description`` (which names bucket, key, upload and part).
    static func message(_ error: S3Error, subject: String) -> String {
        if case .transfer(let failure) = error { return ErrorPresenter.message(failure, subject: subject, of: name(failure)) }
        if case .retriesExhausted(_, _, _, _, let attempts, .transfer(let failure)) = error {
            return ErrorPresenter.message(failure, subject: subject, of: name(failure)) + " (after \(attempts) attempts)"
        }
        return error.description
    }

    /// A failure before any request, with nothing to name but itself. The library's wording of
    /// missing credentials also offers `S3Credentials`, which a command line cannot pass.
    static func message(_ error: S3Error) -> String {
        if case .missingCredentials(let reason) = error {
            return "no S3 credentials: \(reason); set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary credentials)"
        }
        return error.description
    }

    /// The same without the subject, for retry lines.
    static func sentence(_ error: S3Error) -> String {
        if case .transfer(let failure) = error { return ErrorPresenter.sentence(failure, of: name(failure)) }
        return error.description
    }

    /// `S3` for an S3 request's own failure, which says so as ``S3Error/description`` does.
    private static func name(_ failure: BlobUploadError) -> String? {
        S3Error.isRequestFailure(failure) ? "S3" : nil
    }

    /// The warning after `CreateMultipartUpload` was sent again (``S3UploadEvent/createdAgain(uploadID:otherUploads:)``):
    /// the key's other unfinished uploads of `target` (`s3://bucket/key`), and how to abort one.
    static func createdAgainWarning(others: [S3UnfinishedUpload]?, target: String) -> String {
        let start = "\(target): CreateMultipartUpload was sent again after a failure that may have reached the server, "
            + "so an earlier attempt may have left an upload that nothing will complete (S3 keeps it until it is aborted)"
        guard let others else {
            return start + "; its unfinished uploads could not be listed: see 's3 ls-uploads \(target)'"
        }
        guard !others.isEmpty else { return start + "; the key has no other unfinished upload" }
        let listed = others.map { "\($0.uploadID) (started \(timestamp($0.initiated)))" }.joined(separator: ", ")
        return start + "; the key's other unfinished uploads: \(listed); abort one that is no other writer's with "
            + "'s3 abort \(target) UPLOAD_ID'"
    }
}
