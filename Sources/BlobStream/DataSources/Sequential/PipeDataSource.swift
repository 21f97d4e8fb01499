#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Streams what arrives on a pipe, a FIFO, a socket, a terminal or standard input: data with
/// no known length that can be read once, from its first byte to its last, and never again.
///
/// Reads never wait: a non-blocking descriptor (one this source opened, or an inherited one
/// with `O_NONBLOCK`) is read at once, and EAGAIN means nothing is there yet; an inherited
/// blocking one is first asked with a zero-timeout `poll` whether bytes (or the end) are there.
/// Either way, when nothing is there, a read answers ``BlobSourceReadResult/wouldBlock`` and
/// watches the descriptor from a background queue until it is readable. The data ends when
/// every writer has closed its end, which is why the description's length is `nil` and an end
/// of data is never an error here.
///
/// Because the bytes cannot be read twice, the source keeps the package's read-once rule
/// (``ReadOnceDataSource``): a second open, or a read at any offset but the next one (a seek, a
/// resume, a second pass after a reopen), fails with
/// ``BlobStreamError/sourceFailed(resource:reason:)`` instead of returning other bytes.
public final class PipeDataSource: ForwardingDataSource {
    /// The reader, under the read-once rule.
    public let base: any BlobDataSource
    private let reader: PipeReader

    private init(_ reader: PipeReader) {
        self.reader = reader
        base = ReadOnceDataSource(reader, kind: "a pipe")
    }

    /// A source for the FIFO, socket or device at `path` (`/dev/stdin` too). Opening never waits
    /// for a writer: a FIFO without one simply has no bytes yet.
    public convenience init(path: String) {
        self.init(PipeReader(path: path))
    }

    /// A source for the inherited descriptor `fileDescriptor`, named `name` in errors. The
    /// descriptor is neither closed nor made non-blocking, since other processes may share it.
    public convenience init(fileDescriptor: Int32, name: String) {
        self.init(PipeReader(fileDescriptor: fileDescriptor, name: name))
    }

    /// Standard input, named `-` as `sha256sum` names it.
    public static func standardInput() -> PipeDataSource {
        PipeDataSource(fileDescriptor: STDIN_FILENO, name: "-")
    }

    /// How many reads asked `poll` whether the input was readable before reading it.
    var readinessPolls: Int { reader.readinessPolls }
}
