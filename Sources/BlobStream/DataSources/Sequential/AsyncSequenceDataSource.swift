/// A data source over an `AsyncSequence` of byte chunks (`Data`, `[UInt8]`, any collection of
/// bytes): live data of unknown length — a recording camera, an encoder, a network relay — read
/// once, from its first byte to its last (``ReadOnceDataSource``). Under a ``BlobInputStream``
/// it makes any `AsyncSequence` an `InputStream`.
///
/// A task of its own iterates the sequence, and pulls the next element only when a read finds
/// the one before used up: at most one element is held, so memory is bounded by the
/// producer's chunk size however slowly the consumer reads. `close()` cancels that task. The
/// data ends when the sequence does; an error the producer throws fails the read, and stays
/// available as ``producerFailure``. The task runs on dispatch's threads, never on Swift's
/// cooperative pool, which a blocked reader may be holding.
public final class AsyncSequenceDataSource<Chunks: AsyncSequence & Sendable>: ForwardingDataSource
where Chunks.Element: Collection & Sendable, Chunks.Element.Element == UInt8 {
    /// The reader, under the read-once rule.
    public let base: any BlobDataSource
    private let reader: AsyncSequenceReader<Chunks>

    /// A source named `name` that reads `chunks` once.
    public init(name: String, chunks: Chunks) {
        reader = AsyncSequenceReader(name: name, chunks: chunks)
        base = ReadOnceDataSource(reader, kind: "live data")
    }

    /// What the producer threw, and after how many bytes; `nil` while it has not failed.
    public var producerFailure: (error: any Error, offset: Int64)? { reader.producerFailure }
}
