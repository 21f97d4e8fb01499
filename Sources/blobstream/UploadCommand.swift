import BlobStream
import BlobUpload
import Foundation

/// `blobstream upload`: a resumable tus 1.0 upload of a file or URL.
enum UploadCommand: Command {
    static let words = ["upload"]
    static let summary = "upload a file or URL to a tus server, resumably"
    static let valueOptions: Set<String> = ["--chunk-size", "--resume", "--asset-library", "--filetype"]
    static let flagOptions: Set<String> = ["--restart-if-gone"]

    static var help: String {
        """
        usage: blobstream upload [--chunk-size N] [--resume UPLOAD_URL] <path-or-url> <tus-endpoint>

        Uploads <path-or-url> (a file, or a file:, asset:, http: or https: URL) to the tus 1.0
        server at <tus-endpoint>, in chunks read straight from the source: no temp files, about
        one chunk of memory. Every chunk carries Upload-Checksum when the server supports it.

        As soon as the upload exists, its URL is printed as the first line of standard output:
        keep it to continue after Ctrl-C or a crash with --resume. On success the upload URL is
        printed again as the last line. Failed requests are retried with backoff after asking
        the server for its offset.

        Options:
              --chunk-size N         bytes per PATCH (default 4194304)
              --resume UPLOAD_URL    continue this upload from the server's offset
              --restart-if-gone      start a new upload if the resumed one expired (404/410)
              --filetype TYPE        the filetype metadata (default application/octet-stream)
              --asset-library DIR    the asset library that asset:// URLs name
          -h, --help                 show this help

        A progress bar with rate and time left is drawn on standard error when it is a
        terminal. Exit status: 0 on success, 1 on failure (the message says why), 130 when
        interrupted, 64 for a wrong command line.

        """
    }

    static func run(_ arguments: ParsedArguments, console: Console) throws(CommandFailure) -> Int32 {
        guard arguments.positional.count == 2 else { throw .usage("expected <path-or-url> and <tus-endpoint>") }
        try AssetLibraryOption.register(arguments)
        let sourceName = arguments.positional[0]
        guard let endpoint = URL(string: arguments.positional[1]), endpoint.host != nil else {
            throw .usage("'\(arguments.positional[1])' is not an http(s) URL of a tus endpoint")
        }
        var options = TusUploadOptions()
        if let text = arguments.values["--chunk-size"] {
            guard let size = Int(text), size > 0 else { throw .usage("--chunk-size takes a positive byte count, not '\(text)'") }
            options.chunkSize = size
        }
        if let type = arguments.values["--filetype"] { options.filetype = type }
        options.restartIfGone = arguments.flags.contains("--restart-if-gone")
        var resume: URL?
        if let text = arguments.values["--resume"] {
            guard let url = URL(string: text), url.host != nil else { throw .usage("--resume takes an upload URL, not '\(text)'") }
            resume = url
        }
        let source = try UploadSupport.source(for: sourceName)
        let client = TusClient(endpoint: endpoint)
        let reporter = UploadReporter(console: console, label: sourceName)

        let (resuming, settings) = (resume, options)
        let result = UploadSupport.run { () async throws(BlobUploadError) -> TusUploadResult in
            try await client.upload(source, resuming: resuming, options: settings) { event in reporter.handle(event) }
        }
        reporter.finish()
        switch result {
        case .success(let upload):
            console.output(upload.uploadURL.absoluteString + "\n")
            return ExitStatus.success
        case .failure(.cancelled):
            console.error("\(sourceName): upload interrupted; continue with --resume \(reporter.uploadURL ?? "<the URL printed first>")")
            return 130
        case .failure(let error):
            let resumeHint = reporter.uploadURL.map { " (continue with --resume \($0))" } ?? ""
            throw .runtime("\(sourceName): \(error)\(resumeHint)")
        }
    }
}

/// Prints the upload URL the moment it exists and draws progress; events come from the
/// uploading task, so its state is locked.
private final class UploadReporter: @unchecked Sendable {
    private let lock = NSLock()
    private let console: Console
    private let bar: ProgressBar?
    private var url: String?

    init(console: Console, label: String) {
        self.console = console
        bar = console.standardErrorIsTerminal ? ProgressBar(console: console, label: label) : nil
    }

    /// The upload's URL once it is known.
    var uploadURL: String? { lock.withLock { url } }

    func handle(_ event: TusUploadEvent) {
        lock.withLock {
            switch event {
            case .created(let uploadURL), .resumed(let uploadURL, _):
                if url != uploadURL.absoluteString {
                    url = uploadURL.absoluteString
                    console.output(uploadURL.absoluteString + "\n")
                }
            case .progress(let progress):
                bar?.update(progress)
            case .retrying(let attempt, let delay, let error):
                if bar == nil {
                    console.standardError(String(format: "retry %d in %.1f s after: %@\n", attempt, delay, "\(error)"))
                }
            case .restarting(let goneURL):
                console.standardError("\(goneURL.absoluteString) is gone; starting a new upload\n")
            }
        }
    }

    func finish() {
        lock.withLock { bar?.finish() }
    }
}
