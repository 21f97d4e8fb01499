import BlobStream
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `blobstream cat`: writes a URL's bytes to standard output through URLSession and
/// `BlobURLProtocol`, like `curl -s`: what any URLSession code gets for that URL.
enum CatCommand: Command {
    static let words = ["cat"]
    static let summary = "write a URL's bytes to standard output through URLSession"
    static let valueOptions: Set<String> = ["--range", "--asset-library"]
    static let flagOptions: Set<String> = []

    static var help: String {
        """
        usage: blobstream cat [--range A-B] [--asset-library DIR] <url>

        Writes the bytes of <url> to standard output, loading it with URLSession and
        BlobURLProtocol, so every scheme registered with BlobURLRegistry works: asset://?id=ID
        (with --asset-library), file:// and http(s):// (URLSession's own). The body streams
        through in blocks; memory does not grow with its size.

        Options:
              --range A-B          only bytes A to B (inclusive), as an HTTP Range: A-B, A- or -N
              --asset-library DIR  serve asset://?id=ID from the library folder DIR
          -h, --help               show this help

        Exit status: 0 on success, 1 when the URL cannot be read (the message names it and
        why), 64 for a wrong command line.

        """
    }

    static func run(_ arguments: ParsedArguments, console: Console) throws(CommandFailure) -> Int32 {
        guard arguments.positional.count == 1, let text = arguments.positional.first else {
            throw .usage("expected exactly one <url>")
        }
        guard let url = URL(string: text), url.scheme != nil else { throw .usage("\(text) is not a URL") }
        try AssetLibraryOption.register(arguments)
        var request = URLRequest(url: url)
        if let range = arguments.values["--range"] {
            guard range.contains("-"), !range.contains(","), !range.contains("=") else {
                throw .usage("--range takes A-B, A- or -N, not \(range)")
            }
            request.setValue("bytes=" + range, forHTTPHeaderField: "Range")
        }
        let writer = StandardOutputWriter()
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

    private let done = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var outcome: Outcome = .success

    func wait() -> Outcome {
        done.wait()
        return lock.withLock { outcome }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        if let http = response as? HTTPURLResponse, !(200..<300).contains(http.statusCode) {
            let detail = http.statusCode == 416
                ? "the range is not satisfiable (length \(http.value(forHTTPHeaderField: "Content-Range")?.split(separator: "/").last ?? "unknown"))"
                : "HTTP status \(http.statusCode)"
            fail(dataTask, "\(dataTask.originalRequest?.url?.absoluteString ?? "?"): \(detail)")
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard lock.withLock({ if case .success = outcome { return true } else { return false } }) else { return }
        let written = data.withUnsafeBytes { bytes -> Bool in
            var offset = 0
            while offset < bytes.count {
                let count = Glibc.write(STDOUT_FILENO, bytes.baseAddress! + offset, bytes.count - offset)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return false }
                offset += count
            }
            return true
        }
        if !written { fail(dataTask, "standard output: write failed (errno \(errno))") }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        lock.withLock {
            guard case .success = outcome, let error else { return }
            let subject = task.originalRequest?.url?.absoluteString ?? "?"
            if let typed = error as? BlobStreamError {
                outcome = .failure(ErrorPresenter.message(typed, subject: subject))
            } else {
                outcome = .failure("\(subject): \(error.localizedDescription)")
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
