import BlobStream
import Foundation
internal import SystemCalls

/// `blobstream cat` of an `http(s):` URL: the package's own HTTP source, read in blocks and
/// written as they come. The source pauses its download while standard output is slow (TCP
/// flow control), so memory stays bounded whatever the reader's speed, and a `--range` is
/// asked of the server (a server that ignores ranges is read from the first byte asked).
enum HTTPCat {
    /// Writes `range` (or the whole blob) of `url` to standard output, with `headers` on its
    /// requests and at most `rateLimit` bytes per second (the writes are paced, and the
    /// download, which pauses while its buffer is full, follows them).
    /// - Throws: ``CommandFailure/runtime(_:)`` naming the URL and why, before any byte when
    ///   the first answer already shows it (a status, a certificate, another range).
    static func run(
        _ url: URL, range: BlobResponsePlan.RequestedRange?, headers: [String: String], rateLimit: RateLimit?, transport: Transport,
        console: Console
    ) throws(CommandFailure) {
        // Every -H field may be a credential: none follows a redirect to another origin.
        var configuration = HTTPDataSource.Configuration(headers: headers, credentialHeaders: Set(headers.keys), transport: transport)
        configuration.retryObserver = ErrorPresenter.retryPrinter(console)
        let stream = BlobInputStream(dataSource: HTTPDataSource(url: url, configuration: configuration))
        defer { stream.close() }
        var remaining = Int64.max
        switch range {
        case nil:
            stream.open()
        case .from(let first, let last)?:
            try seek(stream, to: first, url: url)
            stream.open()
            // From the blob's end on there is no byte to give (RFC 9110 §14.1.1), as for a file.
            if let length = stream.length, first >= length { throw unsatisfiable(url, length: length) }
            // `last` may be Int64.max ("to the end" written out): the count would overflow.
            if let last { remaining = last == .max ? .max : last - first + 1 }
        case .suffix(let count)?:
            stream.open()
            guard let length = stream.length else {
                throw fail(stream, url, otherwise: "the server names no length, so the last \(count) bytes cannot be found")
            }
            // An empty suffix, or any of an empty blob, has no byte to give (RFC 9110 §14.1.1).
            if length == 0 || count == 0 { throw unsatisfiable(url, length: length) }
            try seek(stream, to: max(0, length - count), url: url)
        }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        while remaining > 0 {
            let wanted = Int(min(Int64(rateLimit?.sliceSize ?? buffer.count), Int64(buffer.count), remaining))
            let count = stream.read(buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), maxLength: wanted)
            if count == 0, stream.streamStatus == .atEnd { return }
            guard count > 0 else { throw fail(stream, url, otherwise: "the read stopped (\(stream.streamStatus))") }
            rateLimit?.pace(count)
            if let failure = FileDescriptor.standardOutput.writeAll(UnsafeRawBufferPointer(rebasing: buffer.prefix(count))) {
                throw .runtime(StandardStreams.outputFailure(failure.text))
            }
            remaining -= Int64(count)
        }
    }

    private static func unsatisfiable(_ url: URL, length: Int64) -> CommandFailure {
        .runtime("\(url.absoluteString): the range is not satisfiable (length \(length))")
    }

    private static func seek(_ stream: BlobInputStream, to offset: Int64, url: URL) throws(CommandFailure) {
        do {
            try stream.seek(to: offset)
        } catch {
            throw .runtime(ErrorPresenter.message(error, subject: url.absoluteString))
        }
    }

    /// The stream's error in the command's words, or `otherwise`.
    private static func fail(_ stream: BlobInputStream, _ url: URL, otherwise: String) -> CommandFailure {
        guard let error = stream.blobError else { return .runtime("\(url.absoluteString): \(otherwise)") }
        return .runtime(ErrorPresenter.message(error, subject: url.absoluteString))
    }
}
