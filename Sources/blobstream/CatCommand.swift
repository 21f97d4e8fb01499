import BlobStream
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
internal import HTTP1
internal import SystemCalls

/// `blobstream cat`: writes a URL's bytes to standard output, like `curl -s`: `http(s):` through
/// the package's own HTTP source (``HTTPCat``), every other scheme through URLSession and
/// `BlobURLProtocol`, which is what any URLSession code gets for that URL.
enum CatCommand: Command {
    static let words = ["cat"]
    static let summary = "write a URL's bytes to standard output"
    static let valueOptions: Set<String> = Set(["--range", "--asset-library", TLSOption.name, RateLimitOption.name])
        .union(HeaderOption.names)
    static let flagOptions: Set<String> = []

    static var help: String {
        """
        usage: blobstream cat [--range A-B] [-H 'Name: value']... [--limit-rate RATE] [--asset-library DIR] <url>

        Writes the bytes of <url> to standard output. http:// and https:// are read with the
        package's own HTTP client, which pauses the download while the output is slow; every
        other scheme registered with BlobURLRegistry is loaded with URLSession and
        BlobURLProtocol: asset://?id=ID (with --asset-library), file://. The body streams
        through in blocks; memory does not grow with its size, nor with a slow reader.

        Options:
              --range A-B          only bytes A to B (inclusive), as an HTTP Range: A-B, A- or -N
              --asset-library DIR  serve asset://?id=ID from the library folder DIR
              --cacert FILE        trust only these CA certificates (PEM) for https: (default: the system's, or SSL_CERT_FILE)
          -H, --header 'Name: value'
                                   a header field for the requests of an http(s) URL (repeatable); a
                                   credential among them is not sent after a redirect to another origin
              --limit-rate RATE    read an http(s) URL at most RATE bytes per second (curl's units: 100K, 1M, 2G)
          -h, --help               show this help

        Exit status: 0 on success, 1 when the URL cannot be read (the message names it and
        why) or a --range is not answered with that range (206 starting at A), 64 for a wrong
        command line (a --range such as 5-x or 5-3).

        """
    }

    static func run(_ arguments: ParsedArguments, console: Console) throws(CommandFailure) -> Int32 {
        guard arguments.positional.count == 1, let text = arguments.positional.first else {
            throw .usage("expected exactly one <url>")
        }
        guard let url = URL(string: text), url.scheme != nil else { throw .usage("\(text) is not a URL") }
        try AssetLibraryOption.register(arguments)
        var request = URLRequest(url: url)
        var requestedRange: StandardOutputWriter.RequestedRange?
        if let range = arguments.values["--range"] {
            // The protocol's own parser: what it would ignore (and answer with the whole blob)
            // is refused here.
            let header = "bytes=" + range
            guard let parsed = BlobResponsePlan.requestedRange(header, saturating: false) else {
                throw .usage("--range takes A-B (A <= B), A- or -N with decimal byte offsets, not \(range)")
            }
            request.setValue(header, forHTTPHeaderField: "Range")
            requestedRange = .init(text: range, range: parsed)
        }
        let headers = try HeaderOption.fields(arguments, owner: .download)
        let rateLimit = try RateLimitOption.limit(arguments)
        if ["http", "https"].contains(url.scheme?.lowercased() ?? "") {
            try HTTPCat.run(
                url, range: requestedRange?.range, headers: headers, rateLimit: rateLimit,
                transport: TLSOption.register(arguments, console: console), console: console)
            return ExitStatus.success
        }
        if !headers.isEmpty || rateLimit != nil {
            throw .usage("-H and --limit-rate apply to http: and https: URLs only")
        }
        let writer = StandardOutputWriter(requestedRange: requestedRange)
        let configuration = URLSessionConfiguration.ephemeral
        BlobURLProtocol.install(into: configuration)
        let session = URLSession(configuration: configuration, delegate: writer, delegateQueue: nil)
        session.dataTask(with: request).resume()
        let outcome = writer.wait()
        session.finishTasksAndInvalidate()
        switch outcome {
        case .success:
            return ExitStatus.success
        case .failure(let message):
            throw .runtime(message)
        }
    }
}

/// Receives a data task's body on the session's delegate queue and writes it to standard
/// output as it comes; the command's thread waits for the end.
private final class StandardOutputWriter: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    enum Outcome {
        case success
        case failure(String)
    }

    /// The `--range` sent: its text and what it asks for.
    struct RequestedRange {
        var text: String
        var range: BlobResponsePlan.RequestedRange
    }

    private let done = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var outcome: Outcome = .success
    private let requestedRange: RequestedRange?

    init(requestedRange: RequestedRange?) {
        self.requestedRange = requestedRange
    }

    func wait() -> Outcome {
        done.wait()
        return lock.withLock { outcome }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        let subject = dataTask.originalRequest?.url?.absoluteString ?? "?"
        let http = response as? HTTPURLResponse
        if let http, !(200..<300).contains(http.statusCode) {
            let total = HTTPResponseHead(http).unsatisfiedRangeTotal
            let detail = http.statusCode == 416
                ? "the range is not satisfiable (length \(total.map(String.init) ?? "unknown"))"
                : ErrorPresenter.statusLine(http.statusCode)
            fail(dataTask, "\(subject): \(detail)")
        } else if let requestedRange, let problem = Self.rangeProblem(http, requested: requestedRange) {
            fail(dataTask, "\(subject): \(problem)")
        }
        completionHandler(.allow)
    }

    /// Why `response` is not the requested range, or `nil` when it is: a 200 is the whole blob
    /// (a server, or a source of unknown length, ignored the range), and a 206 must span exactly
    /// the bytes asked for (clamped to the blob's end), not merely start there.
    private static func rangeProblem(_ response: HTTPURLResponse?, requested: RequestedRange) -> String? {
        guard let response, response.statusCode == 206 else {
            let status = response.map { "status \($0.statusCode)" } ?? "a response without a status"
            return "the server ignored the range \(requested.text) (\(status), not 206 Partial Content)"
        }
        let head = HTTPResponseHead(response)
        guard let sent = head.contentRange else {
            return "the 206 answer to the range \(requested.text) has no valid Content-Range (\(head["content-range"] ?? "none"))"
        }
        let expected: (first: Int64, last: Int64?)
        switch requested.range {
        case .from(let first, let last):
            expected = (first, [last, sent.total.map { $0 - 1 }].compactMap { $0 }.min())
        case .suffix(let count):
            guard let total = sent.total else {
                return "the 206 answer to the range \(requested.text) names no length (Content-Range: \(head["content-range"] ?? ""))"
            }
            expected = (max(0, total - count), total - 1)
        }
        guard sent.first == expected.first, expected.last.map({ sent.last == $0 }) ?? true else {
            return "the server answered the range \(requested.text) with another one (Content-Range: \(head["content-range"] ?? ""))"
        }
        return nil
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard lock.withLock({ if case .success = outcome { return true } else { return false } }) else { return }
        if let failure = data.withUnsafeBytes({ FileDescriptor.standardOutput.writeAll($0) }) {
            fail(dataTask, StandardStreams.outputFailure(failure.text))
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        lock.withLock {
            guard case .success = outcome, let error else { return }
            let subject = task.originalRequest?.url?.absoluteString ?? "?"
            if let typed = error as? BlobStreamError {
                outcome = .failure(ErrorPresenter.message(typed, subject: subject))
            } else {
                // Worded as every other command words it (a refused connection included).
                outcome = .failure(ErrorPresenter.message(.network(url: subject, reason: error.localizedDescription), subject: subject))
            }
        }
        done.signal()
    }

    private func fail(_ task: URLSessionTask, _ message: String) {
        lock.withLock {
            if case .success = outcome { outcome = .failure(message) }
        }
        task.cancel()
    }
}
