import BlobStream
import BlobUpload
import Foundation

/// `blobstream s3 cp`: an S3 upload (single PUT or parallel multipart) of a file or URL,
/// resumable from its upload id.
enum S3CopyCommand: Command {
    static let words = ["s3", "cp"]
    static let summary = "upload a file or URL to S3 (multipart, parallel, resumable)"
    static let valueOptions: Set<String> = [
        "--endpoint", "--part-size", "--parallel", "--checksum", "--resume", "--asset-library", TLSOption.name, RateLimitOption.name,
    ]
    static let flagOptions: Set<String> = ["--full-object", JournalOption.flag]

    static var help: String {
        """
        usage: blobstream s3 cp [--endpoint URL] [--part-size N] [--parallel N] [--checksum ALG]
                                [--resume UPLOAD_ID | --no-resume] [--limit-rate RATE] <path-or-url> s3://bucket/key

        Uploads <path-or-url> (a file, a file:, asset:, http: or https: URL, or - for standard
        input) to an S3-compatible store: one PUT up to one part size, else a multipart upload
        whose parts are read straight from the source and sent in parallel (memory: parts in
        flight × part size; no temp files). Every part carries a checksum computed while it is
        read, which the server verifies. A pipe (standard input, a FIFO) is read once, in order, until it ends, and always
        goes up as a multipart upload of at most 10,000 parts of --part-size.

        The multipart upload id is printed as the first line of standard output as soon as it
        exists. Run again after Ctrl-C, a crash or a reboot, the same command continues it
        ("resuming ID at N bytes" on standard error), sending only the parts the server lacks
        (or holds with other bytes): the upload is kept in the upload journal
        ($XDG_STATE_HOME/blobstream/uploads, by default ~/.local/state/blobstream/uploads)
        until it completes, for at most 7 days. A source that changed since, or an upload the
        server no longer has, starts a new upload (the old one is aborted), and the command
        says why. Standard input and other pipes are never journaled. On success the last line is
        "s3://bucket/key ETAG ALGORITHM=CHECKSUM" (the checksum as S3 prints it, base64; a
        whole-object one the server did not name back is reported "not verified by the
        server" on standard error; none with --checksum none). Credentials come from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY
        and AWS_SESSION_TOKEN, the region from AWS_REGION (default us-east-1). The endpoint is
        https:// (verified against the system's CAs, SSL_CERT_FILE or --cacert) or http://;
        buckets are addressed path-style.

        Options:
              --endpoint URL       the S3 endpoint (default: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL)
              --part-size N        bytes per part, from 5M to 5G (default 8M, grown to stay
                                   within 10,000 parts); K, M and G mean KiB, MiB and GiB
              --parallel N         parts in flight, from 1 to 64 (default 4)
              --checksum ALG       crc32c (default), crc32, sha1, sha256 or crc64nvme; none
                                   sends no checksum fields (for a server that rejects them):
                                   every body carries Content-MD5 instead
              --full-object        a multipart upload's checksum is the CRC of the whole object
                                   (x-amz-checksum-type FULL_OBJECT, combined from the parts'
                                   CRCs), not a checksum of checksums; crc32 and crc32c only,
                                   and always so for crc64nvme
              --resume UPLOAD_ID   continue this multipart upload
              --no-resume          start a new upload even if the journal has one (which a
                                   later run then continues)
              --asset-library DIR  the asset library that asset:// URLs name
              --cacert FILE        trust only these CA certificates (PEM) for https: (default: the system's, or SSL_CERT_FILE)
              --limit-rate RATE    send at most RATE bytes per second, all parts together (curl's units:
                                   100K, 1M, 2G)
          -h, --help               show this help

        A progress bar with rate and time left is drawn on standard error when it is a
        terminal: '#' for parts S3 confirmed, '=' for bytes of parts in flight. Exit status: 0 on success, 1 on failure, 130 (Ctrl-C) or 143 (SIGTERM) when
        interrupted, 64 for a wrong command line.

        """
    }

    static func run(_ arguments: ParsedArguments, console: Console) throws(CommandFailure) -> Int32 {
        guard arguments.positional.count == 2 else { throw .usage("expected <path-or-url> and s3://bucket/key") }
        let sourceName = arguments.positional[0]
        let (bucket, key) = try S3Support.target(arguments.positional[1])
        var options = S3UploadOptions()
        if let text = arguments.values["--part-size"] {
            options.partSize = Int(try ByteCountArgument.parse(
                text, option: "--part-size",
                bounds: Int64(S3UploadOptions.minimumPartSize)...Int64(S3UploadOptions.maximumPartSize)))
        }
        if let text = arguments.values["--parallel"] {
            // Digits only: Int("+3") would take a sign, which no other number option accepts.
            guard text.utf8.allSatisfy({ (48...57).contains($0) }), let count = Int(text), (1...64).contains(count) else {
                throw .usage("--parallel '\(text)': expected a number from 1 to 64")
            }
            options.parallelParts = count
        }
        if let text = arguments.values["--checksum"] {
            if text.lowercased() == "none" {
                options.sendsChecksums = false
            } else {
                guard let algorithm = S3ChecksumAlgorithm(rawValue: text.lowercased()) else {
                    throw .usage("--checksum '\(text)': expected crc32c, crc32, sha1, sha256, crc64nvme or none")
                }
                options.checksum = algorithm
            }
        }
        if arguments.flags.contains("--full-object") {
            guard options.checksum.combines, options.sendsChecksums else {
                throw .usage("--full-object needs a CRC (--checksum crc32c, crc32 or crc64nvme), not \(options.checksum)")
            }
            options.fullObjectChecksum = true
        }
        let resume = arguments.values["--resume"]
        if let resume, resume.isEmpty { throw .usage("--resume needs an upload id") }
        try AssetLibraryOption.register(arguments)
        try TLSOption.register(arguments, console: console)
        let source = try UploadSupport.source(for: sourceName)
        options.journal = try JournalOption.journal(arguments, readOnce: (try? InputArgument(sourceName))?.isPipe == true, console: console)
        options.continuesJournaledUpload = JournalOption.continues(arguments)
        let client = try S3Support.client(bucket: bucket, arguments: arguments)
        let reporter = S3CopyReporter(console: console, label: sourceName, target: "s3://\(bucket)/\(key)", resuming: resume)
        let settings = options
        let outcome = UploadSupport.run { () async throws(S3Error) -> S3UploadResult in
            try await client.upload(source, key: key, options: settings, resuming: resume) { reporter.handle($0) }
        }
        reporter.finish()
        let uploadID = reporter.uploadID ?? resume ?? reporter.journaledID
        switch outcome.result {
        case .success(let upload):
            let checksum = upload.checksum.map { " \(settings.checksum)=\($0)" } ?? ""
            console.output("s3://\(bucket)/\(key) \(upload.eTag)\(checksum)\n")
            // A checksum of the whole object that the server did not name back is this client's alone.
            let wholeObject = settings.fullObjectChecksum || settings.checksum == .crc64nvme || upload.uploadID == nil
            if settings.sendsChecksums, wholeObject, !upload.checksumVerifiedByServer {
                console.error("s3://\(bucket)/\(key): the \(settings.checksum) checksum \(upload.checksum ?? "") is this client's; not verified by the server")
            }
            return ExitStatus.success
        case .failure(let error):
            if let status = outcome.interruption.exitStatus {
                if let uploadID {
                    console.error("\(sourceName): upload \(outcome.interruption.signalName); continue with --resume \(uploadID)")
                } else {
                    console.error("\(sourceName): upload \(outcome.interruption.signalName) before a multipart upload was created; nothing to resume")
                }
                return status
            }
            var message = S3Support.message(error, subject: sourceName)
            if let uploadID { message += Self.advice(after: error, uploadID: uploadID, bucket: bucket, key: key) }
            // The journal's upload failed before it could be continued: it stays the journal's,
            // and each run would ask it again.
            if reporter.uploadID == nil, let journaled = reporter.journaledID {
                message += "; \(journaled) is the upload journal's: --no-resume starts a new upload instead"
            }
            throw .runtime(message)
        }
    }

    /// What to do with the multipart upload `uploadID` of `bucket`/`key` after `error`, as a
    /// parenthesis to append: `--resume` where another run may get further, else how to delete
    /// it — its parts stay on the server (and cost storage) until it is aborted — and nothing
    /// for an upload that is gone. Decided by the error's case alone: what the message happens
    /// to contain (the upload id inside a quoted URL, say) changes nothing.
    static func advice(after error: S3Error, uploadID: String, bucket: String, key: String) -> String {
        if case .uploadGone = error { return "" }
        return isResumable(error)
            ? " (continue with --resume \(uploadID))"
            : " (upload \(uploadID) is left on the server; delete it with blobstream s3 abort s3://\(bucket)/\(key) \(uploadID))"
    }

    /// Whether another run with `--resume` may get further after `error`: failures that may
    /// pass (the network, a server error, spent retries, an interruption). A refused
    /// configuration, a broken protocol or a source too large fails the same way again, so
    /// the message does not send the user there.
    static func isResumable(_ error: S3Error) -> Bool {
        switch error {
        case .retriesExhausted, .cancelled:
            return true
        case .service(let failure):
            // 401 and 403 too: expired or wrong credentials, or a skewed clock, pass once fixed,
            // and the parts already stored need not be sent again.
            return failure.statusCode >= 500 || [401, 403, 408, 429].contains(failure.statusCode)
        case .transfer(let failure):
            return UploadCommand.isResumable(failure)
        case .missingCredentials, .invalidConfiguration, .unsupportedEndpoint, .uploadGone, .protocolViolation, .sourceTooLarge:
            return false
        }
    }
}

/// Prints the upload id the moment it exists, draws progress and announces retries; events
/// come from the upload's threads, so its state is locked.
private final class S3CopyReporter: @unchecked Sendable {
    private let lock = NSLock()
    private let console: Console
    private let label: String
    /// `s3://bucket/key`.
    private let target: String
    private let bar: ProgressBar?
    private var id: String?
    private var confirmed: Int64 = 0
    private var sent: Int64 = 0

    init(console: Console, label: String, target: String, resuming: String?) {
        self.console = console
        self.label = label
        self.target = target
        bar = console.standardErrorIsTerminal ? ProgressBar(console: console, label: label) : nil
        if let resuming {
            id = resuming
            console.output(resuming + "\n")
        }
    }

    /// The multipart upload's id once it is known.
    var uploadID: String? { lock.withLock { id } }
    /// The upload journal's upload, once it is asked for its parts.
    var journaledID: String? { lock.withLock { journaled } }
    private var journaled: String?

    func handle(_ event: S3UploadEvent) {
        lock.withLock {
            switch event {
            case .created(let uploadID):
                id = uploadID
                console.output(uploadID + "\n")
            case .progress(let done, let total):
                confirmed = done
                bar?.update(TransferProgress(completedBytes: done, totalBytes: total, sentBytes: sent))
            case .sent(let bytes, let total):
                sent = bytes
                bar?.update(TransferProgress(completedBytes: confirmed, totalBytes: total, sentBytes: bytes))
            case .retrying(let part, let attempt, let delay, let error):
                bar?.finish()
                let what = part.map { " of part \($0)" } ?? ""
                console.error(String(format: "retry %d%@ in %.1f s after: %@", attempt - 1, what, delay,
                                     S3Support.sentence(error)))
            case .journal(let notice):
                if case .found(let upload) = notice { journaled = upload }
                if case .resuming(let uploadID, _) = notice, id == nil {
                    // The upload id comes first on standard output, as for a new upload.
                    id = uploadID
                    console.output(uploadID + "\n")
                }
                console.error(JournalOption.message(notice, subject: label))
            case .createdAgain(_, let others):
                bar?.finish()
                console.error(S3Support.createdAgainWarning(others: others, target: target))
            case .resumed, .partUploaded:
                break
            }
        }
    }

    func finish() {
        lock.withLock { bar?.finish() }
    }
}
