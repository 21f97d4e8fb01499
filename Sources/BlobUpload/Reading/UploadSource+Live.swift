import BlobStream
import Foundation
internal import SystemCalls

extension UploadSource {
    /// Live data of unknown length — a recording camera, an encoder, a network relay — from
    /// any `AsyncSequence` of byte chunks: `Data`, `[UInt8]`, or any other collection of bytes.
    ///
    /// ```swift
    /// let (chunks, producer) = AsyncThrowingStream.makeStream(of: Data.self)
    /// // the encoder calls producer.yield(data) as frames come, producer.finish() at the end
    /// let result = try await client.upload(.live(name: "clip.mp4", chunks))
    /// ```
    ///
    /// - The sequence is iterated once, by a task of the upload's, which pulls the next element
    ///   only when the upload needs more bytes: the upload holds at most one element and its own
    ///   chunks. Nothing is pulled before the upload starts reading. What the *sequence* holds is
    ///   its own affair: one that makes an element when asked (its `next()` encodes, reads or
    ///   receives it) stays within those bounds at any pace, while an `AsyncStream` buffers
    ///   every element yielded ahead of the upload (unbounded by default) — a producer that
    ///   outruns the network there should wait, or the stream should be given a buffering
    ///   policy the producer can live with.
    /// - The data ends when the sequence does. A ``TusClient`` upload creates the upload with
    ///   `Upload-Defer-Length: 1` and sends the length with its last `PATCH`; a server without
    ///   the creation-defer-length extension is refused with
    ///   ``BlobUploadError/deferLengthUnsupported(endpoint:source:)`` before anything is pulled.
    ///   ``StreamedUploader/upload(_:to:method:headers:progress:)`` sends it chunked.
    /// - An error the sequence throws fails the upload with
    ///   ``BlobUploadError/producerFailed(source:offset:error:)``, which carries it whole; the
    ///   server never sees an end.
    /// - A cancelled upload cancels the iterating task and pulls nothing more.
    /// - The bytes are read once: a retry that needs bytes the upload no longer holds (the
    ///   server went back behind the chunk in hand, a restart, a resume) fails with
    ///   ``BlobUploadError/notReplayable(source:offset:available:)`` instead of sending others.
    ///   A tus upload holds the chunk being sent, so a failed `PATCH` is still retried.
    /// - A producer that yields nothing for ``BlobInputStream/readTimeout`` (300 s) fails the
    ///   upload with ``BlobStreamError/timedOut(resource:operation:seconds:)``.
    /// - Parameters:
    ///   - name: A name for messages and the default `filename` metadata.
    ///   - chunks: The bytes, in order. Empty elements are skipped.
    public static func live<Chunks: AsyncSequence & Sendable>(name: String, _ chunks: Chunks) -> UploadSource
    where Chunks.Element: Collection & Sendable, Chunks.Element.Element == UInt8 {
        let dataSource = AsyncSequenceDataSource(name: name, chunks: chunks)
        return live(name: name, opening: dataSource) {
            dataSource.producerFailure.map { failure in
                .producerFailed(source: name, offset: failure.offset, error: ProducerError(failure.error))
            }
        }
    }

    /// Live data of unknown length from a data source that can be read only once, in order,
    /// such as a ``PipeDataSource`` over standard input; the same rules as
    /// ``live(name:_:)``. The data source is opened once, by the upload.
    /// - Parameters:
    ///   - name: A name for messages and the default `filename` metadata.
    ///   - dataSource: The source, not yet opened.
    public static func live(name: String, dataSource: any BlobDataSource) -> UploadSource {
        live(name: name, opening: dataSource, producerFailure: nil)
    }

    private static func live(
        name: String, opening dataSource: any BlobDataSource,
        producerFailure: (@Sendable () -> BlobUploadError?)?
    ) -> UploadSource {
        let handout = StreamHandout(ReadOnceDataSource(dataSource, kind: "live data"))
        return UploadSource(name: name, length: nil, isLive: true, producerFailure: producerFailure) { offset, _ in
            Positioned(stream: try handout.take(at: offset, name: name), startOffset: 0)
        }
    }
}

/// Hands out the one stream live data can have, at its first byte; anything else would need
/// bytes that are gone.
private final class StreamHandout: Sendable {
    private let dataSource: ReadOnceDataSource
    private let handedOut = LockedValue(false)

    init(_ dataSource: ReadOnceDataSource) {
        self.dataSource = dataSource
    }

    /// A stream over the data source, the first time and at offset 0; otherwise
    /// ``BlobUploadError/notReplayable(source:offset:available:)``.
    func take(at offset: Int64, name: String) throws(BlobUploadError) -> BlobInputStream {
        let first = handedOut.withLock { handed in
            defer { handed = true }
            return !handed
        }
        guard first, offset == 0 else {
            throw .notReplayable(source: name, offset: offset, available: first ? 0 : dataSource.reached)
        }
        return BlobInputStream(dataSource: dataSource)
    }
}
