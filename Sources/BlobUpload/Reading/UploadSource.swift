import BlobStream
import Foundation

/// Where a tus upload reads its bytes: a way to get a fresh stream *at any offset*, so the
/// upload can continue at whatever offset the server reports after a failure or in a later
/// process — a single stream could only go forward.
///
/// A ``BlobInputStream`` starts at an offset without reading the bytes before it
/// (``BlobInputStream/seek(to:)`` before the open); a plain `InputStream` is opened at its start
/// and the bytes before the offset are read and dropped.
public struct UploadSource: Sendable {
    /// A name for messages and the default `filename` metadata: a path, a URL, an identifier.
    public let name: String
    /// The length in bytes, or `nil` to learn it from the first ``BlobInputStream`` opened
    /// (``BlobInputStream/length``).
    public let length: Int64?
    /// Whether the bytes can be read only once, in order, and their length is unknown until
    /// they end (``live(name:_:)``): a tus upload then defers its length, and nothing can be
    /// read again.
    let isLive: Bool
    /// Whether its streams open a data source whose version they pin (``dataSource(name:length:_:)``
    /// and the sources built on it), so a version it does not name is a fact, not a gap: an
    /// upload of it then cannot be continued (``TusUploadEvent/unversioned(source:)``). A
    /// caller's own streams name none and are taken on trust.
    let confirmsVersion: Bool
    /// The file's path when the source is a file (``file(path:)``, a `file:` URL): its name is
    /// then a path whatever characters it has (`notes:v2.txt` is no URL).
    let path: String?
    /// Whether a read never waits for more than the disk (a file): a tus chunk of it may be
    /// read on the request's thread while it is sent (``TusChunkReader/positionForStreaming(at:)``).
    var readsWithoutWaiting: Bool { path != nil }
    private let makeStream: @Sendable (_ offset: Int64, _ pin: VersionPin) throws -> Positioned
    /// The typed failure of a live source's producer, once it has failed.
    private let producerFailure: (@Sendable () -> BlobUploadError?)?

    /// A stream and the offset of the first byte it will yield (at most the offset asked for).
    struct Positioned {
        var stream: InputStream
        var startOffset: Int64
    }

    init(
        name: String, length: Int64?, isLive: Bool = false, confirmsVersion: Bool = false, path: String? = nil, producerFailure: (@Sendable () -> BlobUploadError?)? = nil,
        makeStream: @escaping @Sendable (Int64, VersionPin) throws -> Positioned
    ) {
        self.name = name
        self.length = length
        self.isLive = isLive
        self.confirmsVersion = confirmsVersion
        self.path = path
        self.producerFailure = producerFailure
        self.makeStream = makeStream
    }

    /// A source that makes ``BlobInputStream``s (synchronous mode) over fresh data sources.
    ///
    /// Every data source one upload makes must describe the version the first one described
    /// (``BlobSourceDescription/version``): a stream opened again after a failure that finds
    /// another version, or none where there was one, fails the upload with
    /// ``BlobStreamError/sourceChanged(resource:offset:reason:)``. Each upload pins the version
    /// anew, so a source can be uploaded again after it changed.
    /// - Parameters:
    ///   - name: The source's name, for messages and the default `filename`.
    ///   - length: The length if known; otherwise it is learned when the first stream opens.
    ///   - makeDataSource: Makes a new, unopened data source each time the upload needs a
    ///     stream (a stream closes its source for good).
    public static func dataSource(
        name: String,
        length: Int64? = nil,
        _ makeDataSource: @escaping @Sendable () throws -> any BlobDataSource
    ) -> UploadSource {
        dataSource(name: name, length: length, path: nil, makeDataSource)
    }

    static func dataSource(
        name: String, length: Int64? = nil, path: String?,
        _ makeDataSource: @escaping @Sendable () throws -> any BlobDataSource
    ) -> UploadSource {
        UploadSource(name: name, length: length, confirmsVersion: true, path: path) { offset, pin in
            let stream = BlobInputStream(dataSource: PinnedDataSource(try makeDataSource(), pin: pin, offset: offset))
            // Before the open this only records where to start (an offset past the end fails
            // the open); the offsets the upload asks for are never negative.
            try stream.seek(to: offset)
            return Positioned(stream: stream, startOffset: offset)
        }
    }

    /// The file at `path`, read with `pread` (a ``FileDataSource``). Its length is read when
    /// the upload starts; a file that changes meanwhile (its version, inode and modification
    /// time, differs at a reopen or when the end of data is reached) fails the upload rather
    /// than mixing versions, and the last chunk is not sent.
    public static func file(path: String) -> UploadSource {
        dataSource(name: path, path: path) { FileDataSource(path: path) }
    }

    /// The blob at `url`, through `registry`: `file:`, and every scheme registered there
    /// (`asset:`, `http:`, `https:` once their modules register them).
    /// - Throws: ``BlobUploadError/source(_:)`` when the registry cannot make a data source for
    ///   the URL (unknown scheme, malformed URL).
    public static func url(_ url: URL, registry: BlobURLRegistry = .shared) throws(BlobUploadError) -> UploadSource {
        do {
            _ = try registry.dataSource(for: url)
        } catch {
            throw .source(error)
        }
        return dataSource(
            name: url.isFileURL ? url.path : url.absoluteString, path: url.isFileURL ? url.path : nil
        ) {
            try registry.dataSource(for: url)
        }
    }

    /// A source of plain `InputStream`s that the upload positions itself: it opens a new
    /// stream at its start and reads and drops the bytes before the offset it needs.
    /// - Parameters:
    ///   - name: The source's name.
    ///   - length: The exact number of bytes every stream yields.
    ///   - makeStream: Makes a new, unopened stream positioned at the first byte.
    public static func streams(
        name: String,
        length: Int64,
        _ makeStream: @escaping @Sendable () throws -> InputStream
    ) -> UploadSource {
        UploadSource(name: name, length: length) { _, _ in
            Positioned(stream: try makeStream(), startOffset: 0)
        }
    }

    /// A source of streams that start at the offset asked for (a ranged download, a file
    /// handle already seeked), for data that is cheaper to position than to skip.
    /// - Parameters:
    ///   - name: The source's name.
    ///   - length: The total length; the stream for offset `n` yields `length - n` bytes.
    ///   - makeStream: Makes a new, unopened stream whose first byte is the byte at `offset`.
    public static func streams(
        name: String,
        length: Int64,
        startingAt makeStream: @escaping @Sendable (_ offset: Int64) throws -> InputStream
    ) -> UploadSource {
        UploadSource(name: name, length: length) { offset, _ in
            Positioned(stream: try makeStream(offset), startOffset: offset)
        }
    }

    /// `error`, or what it stems from: the failure of a live source's producer, whose error
    /// the stream could only pass on as text. Cancellation stays cancellation.
    func explaining(_ error: BlobUploadError) -> BlobUploadError {
        if case .cancelled = error { return error }
        return producerFailure?() ?? error
    }

    /// A new stream whose first byte is at most `offset`; its data source, if it has one, must
    /// have the version `pin` holds.
    func stream(at offset: Int64, pinnedTo pin: VersionPin) throws(BlobUploadError) -> Positioned {
        do {
            return try makeStream(offset, pin)
        } catch let error as BlobStreamError {
            throw .source(error)
        } catch let error as BlobUploadError {
            throw error
        } catch {
            throw .source(.sourceFailed(resource: name, reason: "could not make a stream: \(error.localizedDescription)"))
        }
    }
}
