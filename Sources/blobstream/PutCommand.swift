import BlobStream
import BlobUpload
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `blobstream put`: a streamed HTTP PUT of a file or URL.
enum PutCommand: Command {
    static let words = ["put"]
    static let summary = "send a file or URL as the body of an HTTP PUT, streamed"
    static let valueOptions: Set<String> = Set(["--asset-library", TLSOption.name, RateLimitOption.name, "--timeout"])
        .union(HeaderOption.names)
    static let flagOptions: Set<String> = []

    static var help: String {
        """
        usage: blobstream put [-H 'Name: value']... [--limit-rate RATE] [--timeout SECONDS] <path-or-url> <url>

        Streams <path-or-url> (a file, a file:, asset: or http(s): URL, or - for standard input,
        a FIFO or a device) as the body of a PUT to <url>, an http:// or https:// URL, without
        temp files. A body of known length is sent with Content-Length (its last byte only once
        the source ended cleanly); standard input, a FIFO or a device with chunked transfer
        coding. A redirect is refused, since it would re-send the body; a 303 after the whole
        body is the server's answer (it names where the result is). Prints the status code and
        the URL.

        Options:
              --asset-library DIR  the asset library that asset:// URLs name
              --cacert FILE        trust only these CA certificates (PEM) for https: (default: the system's, or SSL_CERT_FILE)
          -H, --header 'Name: value'
                                   a header field for the PUT (repeatable; e.g. 'Authorization: Bearer
                                   TOKEN', 'Content-Type: video/mp4'); sent to <url> only, not to the source
              --limit-rate RATE    send at most RATE bytes per second (curl's units: 100K, 1M, 2G)
              --timeout SECONDS    the longest wait for the server: to connect, through a silence while
                                   the body goes out, and for the whole answer once it is sent (default 30;
                                   a server behind a proxy that stores the body first may need more)
          -h, --help               show this help

        A progress bar is drawn on standard error when it is a terminal. Exit status: 0 for a
        2xx answer (or that 303), 1 otherwise (the message says why), 130 (Ctrl-C) or 143 (SIGTERM) when
        interrupted, 64 for a wrong command line.

        """
    }

    static func run(_ arguments: ParsedArguments, console: Console) throws(CommandFailure) -> Int32 {
        guard arguments.positional.count == 2 else { throw .usage("expected <path-or-url> and <url>") }
        let sourceName = arguments.positional[0]
        let target = try HTTPURLArgument.parse(arguments.positional[1], role: "the PUT target")
        let headers = try HeaderOption.fields(arguments, owner: .http)
        let rateLimit = try RateLimitOption.limit(arguments)
        let configuration = try timeoutConfiguration(arguments)
        try AssetLibraryOption.register(arguments)
        let transport = try TLSOption.register(arguments, console: console)
        let input: InputArgument
        let stream: BlobInputStream
        do throws(BlobStreamError) {
            input = try InputArgument(sourceName)
            stream = try input.stream()
        } catch {
            throw .runtime(ErrorPresenter.message(error, subject: sourceName))
        }
        // A file's size is the body's expected length: a body that ends short of it, or that
        // the server stops reading early, then fails the PUT.
        let expectedLength = input.filePath.flatMap { path in
            (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value
        }
        let body = StreamHandOff(stream)
        let bar = console.standardErrorIsTerminal ? LockedProgressBar(ProgressBar(console: console, label: sourceName)) : nil
        let outcome = UploadSupport.run { () async throws(BlobUploadError) -> HTTPUploadResponse in
            try await StreamedUploader(configuration: configuration, transport: transport, rateLimit: rateLimit).upload(
                body.take(), to: target, headers: headers, expectedLength: expectedLength
            ) { progress in
                bar?.update(progress)
            }
        }
        bar?.finish()
        if case .failure = outcome.result, let status = outcome.interruption.exitStatus {
            // The body may have gone out whole and been stored: only the answer would say.
            console.error("\(sourceName): PUT \(outcome.interruption.signalName) before the server confirmed it; run it again "
                + "to be sure the server has the whole body")
            return status
        }
        switch outcome.result {
        case .success(let response):
            console.output("\(response.statusCode) \(target.absoluteString)\n")
            return ExitStatus.success
        case .failure(let error):
            throw .runtime(ErrorPresenter.message(error, subject: sourceName))
        }
    }
}

extension PutCommand {
    /// The session configuration for `--timeout SECONDS` (from 1 s to a day), or `nil` for the
    /// uploader's own (30 s).
    static func timeoutConfiguration(_ arguments: ParsedArguments) throws(CommandFailure) -> URLSessionConfiguration? {
        guard let text = arguments.lastValue(of: "--timeout") else { return nil }
        guard let seconds = Double(text), seconds.isFinite, (1...86_400).contains(seconds) else {
            throw .usage("--timeout takes seconds from 1 to 86400, not '\(text)'")
        }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = seconds
        return configuration
    }
}

/// Hands a stream, which Foundation does not mark `Sendable`, to the one task that uploads it.
private final class StreamHandOff: @unchecked Sendable {
    private var stream: InputStream?
    init(_ stream: InputStream) { self.stream = stream }
    /// The stream, once.
    func take() -> sending InputStream {
        defer { stream = nil }
        return stream!
    }
}

/// A progress bar updated from the uploading task.
private final class LockedProgressBar: @unchecked Sendable {
    private let lock = NSLock()
    private let bar: ProgressBar
    init(_ bar: ProgressBar) { self.bar = bar }
    func update(_ progress: TransferProgress) { lock.withLock { bar.update(progress) } }
    func finish() { lock.withLock { bar.finish() } }
}
