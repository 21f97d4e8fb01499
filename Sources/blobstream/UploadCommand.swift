import BlobStream
import BlobUpload
import Foundation

/// `blobstream upload`: a resumable tus 1.0 upload of a file or URL.
enum UploadCommand: Command {
    static let words = ["upload"]
    static let summary = "upload a file, URL or standard input to a tus server, resumably"
    static let valueOptions: Set<String> = Set(["--chunk-size", "--resume", "--asset-library", "--filetype", "--filename", TLSOption.name, RateLimitOption.name])
        .union(HeaderOption.names)
    static let flagOptions: Set<String> = ["--restart-if-gone", JournalOption.flag]

    /// The smallest `--chunk-size`: below it every PATCH is mostly round trip (a 3 MB file in
    /// 1-byte chunks took over ten minutes), and tus servers accept bodies far larger.
    static let minimumChunkSize: Int64 = 64 << 10
    /// The largest `--chunk-size`: the upload holds about two chunks in memory.
    static let maximumChunkSize: Int64 = 256 << 20

    static var help: String {
        """
        usage: blobstream upload [--chunk-size N] [--resume UPLOAD_URL | --no-resume] [-H 'Name: value']... [--limit-rate RATE]
                                 <path-or-url> <tus-endpoint>

        Uploads <path-or-url> (a file, or a file:, asset:, http: or https: URL) to the tus 1.0
        server at <tus-endpoint>, an http:// or https:// URL, in chunks read straight from the
        source: no temp files, about two chunks of memory. Every chunk carries Upload-Checksum
        when the server supports it.

        - (standard input), a FIFO or a device is read once, as it comes, and its length is
        sent with the last chunk: the server must support the creation-defer-length extension
        (the command says so when it does not). Such an upload cannot be resumed, and a
        failed chunk is retried only while it is still in memory. An http(s) URL whose length is
        not known (a chunked answer) is sent the same way, and the command says so.

        As soon as the upload exists, its URL is printed as the first line of standard output.
        On success the upload URL is printed again as the last line. Failed requests are
        retried with backoff after asking the server for its offset; a server that refuses the
        very first connection of a new upload fails the command at once.

        Run again after Ctrl-C, a crash or a reboot, the same command continues the upload
        from the server's offset ("resuming URL at N bytes" on standard error): the upload is
        kept in the upload journal ($XDG_STATE_HOME/blobstream/uploads, by default
        ~/.local/state/blobstream/uploads) until it completes, for at most 7 days. A source
        that changed since, or an upload the server no longer has, starts a new upload, and
        the command says why. Standard input and other pipes are never journaled.

        Options:
              --chunk-size N         bytes per PATCH, from 64K to 256M (default 4M); K, M and G
                                     mean KiB, MiB and GiB
              --resume UPLOAD_URL    continue this upload from the server's offset
              --no-resume            start a new upload even if the journal has one (which a
                                     later run then continues)
              --restart-if-gone      start a new upload if the resumed one expired (404/410)
              --filename NAME        the filename metadata (default: the source's last path
                                     component); to resume a file renamed since, its old name
              --filetype TYPE        the filetype metadata (default application/octet-stream)
              --asset-library DIR    the asset library that asset:// URLs name
              --cacert FILE          trust only these CA certificates (PEM) for https: (default: the system's, or SSL_CERT_FILE)
          -H, --header 'Name: value' a header field for every request to the tus server (repeatable;
                                     e.g. 'Authorization: Bearer TOKEN'); never sent to another origin,
                                     nor to the source; the tus protocol's own fields are refused
              --limit-rate RATE      send at most RATE bytes per second (curl's units: 100K, 1M, 2G)
          -h, --help                 show this help

        A progress bar with rate and time left is drawn on standard error when it is a
        terminal: '#' for bytes the server confirmed, '=' for bytes sent and not confirmed yet. Exit status: 0 on success, 1 on failure (the message says why), 130 (Ctrl-C)
        or 143 (SIGTERM) when interrupted, 64 for a wrong command line.

        """
    }

    static func run(_ arguments: ParsedArguments, console: Console) throws(CommandFailure) -> Int32 {
        guard arguments.positional.count == 2 else { throw .usage("expected <path-or-url> and <tus-endpoint>") }
        let sourceName = arguments.positional[0]
        let endpoint = try HTTPURLArgument.parse(arguments.positional[1], role: "a tus endpoint")
        var options = TusUploadOptions()
        if let text = arguments.values["--chunk-size"] {
            options.chunkSize = Int(try ByteCountArgument.parse(
                text, option: "--chunk-size", bounds: minimumChunkSize...maximumChunkSize))
        }
        if let type = arguments.values["--filetype"] { options.filetype = type }
        if let name = arguments.values["--filename"] {
            guard !name.isEmpty else { throw .usage("--filename needs a name") }
            options.filename = name
        }
        options.restartIfGone = arguments.flags.contains("--restart-if-gone")
        let resume = try arguments.values["--resume"].map { text throws(CommandFailure) in
            try HTTPURLArgument.parse(text, role: "an upload (--resume)")
        }
        try AssetLibraryOption.register(arguments)
        let transport = try TLSOption.register(arguments, console: console)
        let source = try UploadSupport.source(
            for: sourceName,
            refusingPipe: resume == nil ? nil : "is read once, as it comes, so it cannot continue an upload (--resume); start a new upload")
        // A pipe's bytes are gone once read: its upload cannot be continued.
        var resumable = (try? InputArgument(sourceName))?.isPipe != true
        options.journal = try JournalOption.journal(arguments, readOnce: !resumable, console: console)
        options.continuesJournaledUpload = JournalOption.continues(arguments)
        let client = TusClient(
            endpoint: endpoint, headers: try HeaderOption.fields(arguments, owner: .tus), transport: transport,
            rateLimit: try RateLimitOption.limit(arguments))
        func attempt(_ source: UploadSource, _ settings: TusUploadOptions) -> (UploadSupport.Outcome<TusUploadResult, BlobUploadError>, UploadReporter) {
            let control = UploadSupport.Control<BlobUploadError>()
            let reporter = UploadReporter(
                console: console, label: sourceName, resuming: resume, retryPolicy: settings.retry, control: control)
            let outcome = UploadSupport.run(control: control) { () async throws(BlobUploadError) -> TusUploadResult in
                try await client.upload(source, resuming: resume, options: settings) { event in reporter.handle(event) }
            }
            reporter.finish()
            return (outcome, reporter)
        }
        var (outcome, reporter) = attempt(source, options)
        // A URL of unknown length (a chunked answer) is read once, as standard input is, with
        // its length sent at its end: nothing was created yet when the length was found missing.
        if case .failure(.lengthUnknown) = outcome.result, outcome.interruption.exitStatus == nil, resume == nil,
           case .url(let url)? = try? InputArgument(sourceName) {
            let dataSource: any BlobDataSource
            do throws(BlobStreamError) {
                dataSource = try BlobURLRegistry.shared.dataSource(for: url)
            } catch {
                throw .runtime(ErrorPresenter.message(error, subject: sourceName))
            }
            console.error("\(sourceName): its length is unknown: it is read once, as it comes, its length sent with its last chunk "
                + "(such an upload cannot be resumed)")
            var live = options
            live.journal = nil
            resumable = false
            (outcome, reporter) = attempt(.live(name: sourceName, dataSource: dataSource), live)
        }
        let uploadURL = reporter.uploadURL ?? resume?.absoluteString ?? reporter.journaledURL
        // A source that names no version cannot continue an upload either: nothing could confirm
        // it still has the bytes sent.
        let unresumable = !resumable ? "input read once cannot continue it"
            : reporter.isUnversioned ? "a source that names no version cannot continue it; start a new upload" : nil
        if case .failure = outcome.result, let status = outcome.interruption.exitStatus {
            let what = outcome.interruption.signalName
            if let uploadURL, let unresumable {
                console.error("\(sourceName): upload \(what); \(uploadURL) is incomplete, and \(unresumable)")
            } else if let uploadURL {
                console.error("\(sourceName): upload \(what); continue with \(resumeHint(uploadURL))")
            } else {
                console.error("\(sourceName): upload \(what) before the server created an upload; nothing to resume")
            }
            return status
        }
        switch outcome.result {
        case .success(let upload):
            console.output(upload.uploadURL.absoluteString + "\n")
            return ExitStatus.success
        case .failure(let failure):
            let error = outcome.stopReason ?? failure
            var message = ErrorPresenter.message(error, subject: sourceName)
            if let uploadURL, unresumable == nil { message += advice(after: error, uploadURL: uploadURL) }
            // The journal's upload failed before it could be continued: it stays the journal's,
            // and each run would ask it again.
            if reporter.uploadURL == nil, let journaled = reporter.journaledURL {
                message += "; \(journaled) is the upload journal's: --no-resume starts a new upload instead"
            }
            throw .runtime(message)
        }
    }

    /// `--resume URL`; for a URL with a password, which standard error hides, a pointer to the
    /// first line of standard output, which has it whole.
    private static func resumeHint(_ uploadURL: String) -> String {
        URL(string: uploadURL)?.password != nil
            ? "--resume and the upload URL printed first on standard output"
            : "--resume \(uploadURL)"
    }

    /// What to do with the upload at `uploadURL` after `error`, as a parenthesis to append:
    /// `--resume` only where it can finish the upload soundly, a new upload where the bytes on
    /// the server are of another version of the source, and nothing where the message says
    /// enough (an upload that is gone, a source that does not match it).
    static func advice(after error: BlobUploadError, uploadURL: String) -> String {
        if isResumable(error) { return " (continue with \(resumeHint(uploadURL)))" }
        if isSourceChange(error) {
            return " (start a new upload: the source is not, or cannot be confirmed to be, the version the upload "
                + "started with, so the bytes \(uploadURL) has may be of another one)"
        }
        return ""
    }

    /// Whether another run with `--resume` can finish the upload after `error`: the failure
    /// was transient or an interruption (the connection, a time-out, a server error or a busy
    /// one, retries spent on those, cancellation), so the server's offset is trustworthy and
    /// the source is the one it has the bytes of. Never after a changed source (the server's
    /// bytes are of another version), a server that broke the protocol (its offset cannot be
    /// trusted), a refused redirect or origin, a mismatch of upload and source, or a refusal of
    /// the options: resuming would fail again the same way, or end in a corrupt upload
    /// reported as a success.
    static func isResumable(_ error: BlobUploadError) -> Bool {
        switch error {
        case .network, .retriesExhausted, .cancelled:
            // Retries are only spent on failures that may pass (TusUpload.isTransient).
            return true
        case .httpStatus(_, _, let status, _):
            return isTransient(status)
        case .source(let error):
            switch error {
            case .network, .timedOut, .system, .cancelled:
                return true
            case .httpStatus(_, let status, _):
                return isTransient(status)
            default:
                return false
            }
        case .redirectRefused, .crossOriginRefused, .uploadGone, .checksumMismatch, .lengthMismatch,
             .filenameMismatch, .tooLarge, .protocolViolation, .malformedAnswer, .notTusServer, .lengthUnknown,
             .deferLengthUnsupported, .notReplayable, .producerFailed, .invalidOption, .invalidMetadata,
             .invalidHeader, .bodyIncomplete:
            return false
        }
    }

    /// A server error, a time-out, a lost race or a busy server: statuses another try may pass;
    /// and 401 and 403, which another run passes once the credentials are renewed (an expired
    /// token or signed link), without starting the upload over.
    private static func isTransient(_ status: Int) -> Bool {
        status >= 500 || [401, 403, 408, 409, 423, 429].contains(status)
    }

    /// Whether `error` says the source is not the version the upload started with: it was
    /// rewritten, shrank, or kept changing.
    static func isSourceChange(_ error: BlobUploadError) -> Bool {
        switch error {
        case .source(.sourceChanged), .source(.unexpectedEnd), .source(.invalidatedTooOften):
            return true
        default:
            return false
        }
    }
}

/// Prints the upload URL the moment it exists, draws progress and announces retries; events
/// come from the uploading task, so its state is locked.
private final class UploadReporter: @unchecked Sendable {
    private let lock = NSLock()
    private let console: Console
    private let label: String
    private let bar: ProgressBar?
    private let resuming: URL?
    private let control: UploadSupport.Control<BlobUploadError>
    private var url: String?
    private var announcedRetrying = false
    private let retryPolicy: TusRetryPolicy

    init(console: Console, label: String, resuming: URL?, retryPolicy: TusRetryPolicy, control: UploadSupport.Control<BlobUploadError>) {
        self.console = console
        self.label = label
        self.retryPolicy = retryPolicy
        self.resuming = resuming
        self.control = control
        bar = console.standardErrorIsTerminal ? ProgressBar(console: console, label: label) : nil
    }

    /// The upload's URL once it is known.
    var uploadURL: String? { lock.withLock { url } }
    /// Whether the upload was made from a source that names no version.
    var isUnversioned: Bool { lock.withLock { unversioned } }
    private var unversioned = false
    /// The upload journal's upload, once it is asked for its state.
    var journaledURL: String? { lock.withLock { journaled } }
    private var journaled: String?

    func handle(_ event: TusUploadEvent) {
        lock.withLock {
            switch event {
            case .created(let uploadURL), .resumed(let uploadURL, _):
                if url != uploadURL.absoluteString {
                    url = uploadURL.absoluteString
                    console.output(uploadURL.absoluteString + "\n")
                }
            case .progress(let progress), .sent(let progress):
                bar?.update(progress)
            case .retrying(let attempt, let delay, let error):
                retrying(attempt: attempt, delay: delay, error: error)
            case .createdAgain(let uploadURL, let earlier):
                let them = earlier == 1 ? "an earlier attempt" : "\(earlier) earlier attempts"
                console.error("warning: the upload was created on attempt \(earlier + 1): \(them) failed after it may have reached "
                    + "the server, and may have left an upload that nothing will finish (tus servers remove unfinished uploads "
                    + "when they expire); this upload is \(uploadURL.absoluteString)")
            case .unversioned(let source):
                unversioned = true
                console.error("warning: \(source) names no version (its server sends neither ETag nor Last-Modified): if this "
                    + "upload stops, it cannot be continued, since nothing could confirm that the source still has the same bytes")
            case .restarting(let goneURL):
                console.error("\(goneURL.absoluteString) is gone; starting a new upload")
            case .journal(let notice):
                if case .found(let upload) = notice { journaled = upload }
                console.error(JournalOption.message(notice, subject: label))
            }
        }
    }

    /// A fresh upload whose first connection is refused fails at once: nothing listens there,
    /// and backing off for half a minute would only hide it. Other failures are retried,
    /// announced once with how long the retries may take, then one line per retry.
    private func retrying(attempt: Int, delay: TimeInterval, error: BlobUploadError) {
        if url == nil, resuming == nil, attempt == 1, ErrorPresenter.isConnectionRefused(error) {
            control.stop(because: error)
            return
        }
        bar?.finish()
        var line = String(format: "retry %d in %.1f s after: %@", attempt, delay, ErrorPresenter.sentence(error))
        if !announcedRetrying {
            announcedRetrying = true
            // The waits only: each attempt also has its own time limit.
            line += String(format: " (%d attempts in all, with up to %.0f s of waiting between them)",
                           retryPolicy.maxAttempts, Self.retryBudget(retryPolicy))
        }
        console.error(line)
    }

    /// The longest the retries of one failure series can wait in all: every delay before the
    /// policy gives up, at its largest jitter.
    static func retryBudget(_ policy: TusRetryPolicy) -> TimeInterval {
        (1..<max(1, policy.maxAttempts)).reduce(0) { total, attempt in
            total + min(policy.maxDelay, policy.initialDelay * pow(2, Double(attempt - 1))) * (1 + policy.jitter)
        }
    }

    func finish() {
        lock.withLock { bar?.finish() }
    }
}
