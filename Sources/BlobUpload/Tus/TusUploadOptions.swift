import BlobStream
import Foundation

/// How a tus upload behaves: chunking, metadata, checksums and how hard it tries.
public struct TusUploadOptions: Sendable {
    /// The body size of each PATCH, and the memory the upload needs: two buffers of this size,
    /// one being sent while the next is read (plus, over URLSession, its copy of the chunk in
    /// flight). 4 MiB by default.
    ///
    /// From 1 byte to ``maxChunkSize``; any other value fails the upload with
    /// ``BlobUploadError/invalidOption(name:reason:)`` before anything is sent. The buffers are
    /// never larger than the source, so a chunk size above the source's length costs nothing.
    public var chunkSize: Int = 4 * 1024 * 1024
    /// The largest ``chunkSize``: 1 GiB. Two buffers of a chunk are held in memory, and a
    /// larger request body gains nothing in throughput while most servers refuse it.
    public static let maxChunkSize = 1 << 30
    /// The `filename` metadata; defaults to the last path component of the source's name.
    /// Resuming compares it with the filename the upload carries, if any: give the upload's
    /// name here to resume a file that was renamed since.
    public var filename: String?
    /// The `filetype` metadata. `application/octet-stream` by default.
    public var filetype: String = "application/octet-stream"
    /// Further `Upload-Metadata` pairs; `filename` and `filetype` above win over keys of the
    /// same name here.
    public var metadata: [String: String] = [:]
    /// Which `Upload-Checksum` to send with each PATCH.
    public var checksum: TusChecksumPolicy = .automatic
    /// When the upload turns out to be gone (404/410: expired or terminated), start a new one
    /// from the first byte instead of failing with ``BlobUploadError/uploadGone(url:statusCode:)``.
    /// The new upload URL is reported with ``TusUploadEvent/created(uploadURL:)``.
    public var restartIfGone = false
    /// How often, and how patiently, failed requests are retried.
    public var retry = TusRetryPolicy()
    /// How many times in a row one chunk may be answered 460 Checksum Mismatch before the
    /// upload fails with ``BlobUploadError/checksumMismatch(url:offset:attempts:)``.
    public var maxChecksumMismatches = 3
    /// Extra headers sent with every request (authorization); only ever to the endpoint's
    /// origin, like the client's (see ``TusClient``).
    public var headers: [String: String] = [:]
    /// Where the upload is recorded so that a later run (another process, after a crash or a
    /// reboot) continues it by itself: see ``UploadJournal``. `nil` by default: nothing is
    /// recorded, and only ``TusClient/upload(_:resuming:options:events:)``'s `resuming` continues.
    public var journal: (any UploadJournal)? {
        get { journalReference?.journal }
        set { journalReference = newValue.map(UploadJournalReference.init) }
    }
    /// The journal behind a reference: options holding an existential directly would be
    /// address-only, which keeps closures that capture them from being sent to a task.
    private var journalReference: UploadJournalReference?
    /// Whether the journal's upload of this source is continued (the default). `false` starts a
    /// new upload whatever the journal has, and the new one replaces its entry; the old one is
    /// reported with ``UploadJournalNotice/startingOver(upload:reason:)`` (the server
    /// lets it expire).
    public var continuesJournaledUpload = true
    /// Test seam: given the offset and a copy of each PATCH body (after its checksum was
    /// computed), returns the body to send — to corrupt it in transit or to act between chunks.
    var chunkBodyHook: (@Sendable (_ offset: Int64, _ body: Data) async -> Data)?

    /// Options with every default.
    public init() {}

    /// Fails for values the upload cannot work with, before anything is sent.
    func validate() throws(BlobUploadError) {
        guard (1...Self.maxChunkSize).contains(chunkSize) else {
            throw .invalidOption(
                name: "chunkSize", reason: "\(chunkSize) bytes is not within 1 and \(Self.maxChunkSize) (1 GiB)")
        }
        try TusClient.refuseOwned(headers, by: "the upload's headers")
    }
}

/// Retries with randomised exponential backoff, as the tus protocol recommends.
///
/// Connection failures, timeouts, 5xx, 423 and 429 are retried after a delay; 409 Conflict and
/// 460 Checksum Mismatch at once. Before each retry the client asks the server for its offset
/// (`HEAD`) and continues from there, never from where it believes it was.
public struct TusRetryPolicy: Sendable, Hashable {
    /// Failures in a row (without the server's offset moving forward) after which the upload
    /// gives up with ``BlobUploadError/retriesExhausted(url:offset:attempts:lastError:)``. 8.
    public var maxAttempts = 8
    /// The delay before the first retry, in seconds. 0.25.
    public var initialDelay: TimeInterval = 0.25
    /// The longest delay between retries, in seconds. 8.
    public var maxDelay: TimeInterval = 8
    /// The fraction by which each delay is randomly shortened or lengthened, so clients that
    /// failed together do not retry together. 0.2; taken within 0 and 1. A delay longer than a
    /// day is a day.
    public var jitter = 0.2

    /// A policy with every default.
    public init() {}

    /// The delay before retry number `attempt` (1 for the first).
    func delay(forAttempt attempt: Int) -> TimeInterval {
        let base = min(maxDelay, initialDelay * pow(2, Double(max(0, attempt - 1))))
        // A random range from a negative, infinite or NaN jitter would trap.
        let spread = jitter.isNaN ? 0 : min(max(jitter, 0), 1)
        guard spread > 0, base.isFinite else { return base }
        return max(0, base * Double.random(in: (1 - spread)...(1 + spread)))
    }
}

/// Something that happened during a tus upload, reported as it happens.
public enum TusUploadEvent: Sendable, Hashable {
    /// A new upload was created at `uploadURL`. Save it: ``TusClient/upload(_:resuming:options:events:)``
    /// can continue it later, even from another process. A command-line tool prints it first.
    case created(uploadURL: URL)
    /// The creation `POST` that made the upload at `uploadURL` followed `earlierAttempts` that
    /// failed after they may have reached the server (an answer lost, a time-out, a server
    /// error): each may have made an upload too, which nothing will finish and which the server
    /// keeps until it expires it. tus has no request that lists uploads, so they cannot be
    /// named; a command-line tool warns.
    case createdAgain(uploadURL: URL, earlierAttempts: Int)
    /// The upload was created from a data source that names no version (an HTTP server that
    /// sends neither `ETag` nor `Last-Modified`): if this call fails, the upload cannot be
    /// continued, since nothing could confirm that the source still has the bytes sent. A
    /// ``TusClient/upload(_:resuming:options:events:)`` from such a source fails with
    /// ``BlobStreamError/sourceChanged(resource:offset:reason:)``, and it is not journaled.
    case unversioned(source: String)
    /// An existing upload is being continued from `offset`.
    case resumed(uploadURL: URL, offset: Int64)
    /// The server has confirmed `progress.completedBytes` bytes.
    case progress(TransferProgress)
    /// Bytes of a `PATCH` went out: `progress.sentBytes` have been written to the upload (the
    /// confirmed offset, `progress.completedBytes`, and what this `PATCH` wrote since), ahead of
    /// the server's confirmation, which ``progress(_:)`` reports once it answers. Reported every
    /// 256 KiB or rate-limited slice, from the sending thread while the upload waits for the
    /// request; only on the package's own client (URLSession does not tell).
    case sent(TransferProgress)
    /// Request number `attempt` of a series failed with `error`; the client waits `delay`
    /// seconds, asks the server for its offset and continues from there.
    case retrying(attempt: Int, delay: TimeInterval, error: BlobUploadError)
    /// The upload at `uploadURL` is gone and ``TusUploadOptions/restartIfGone`` is set: a new
    /// upload follows (see ``created(uploadURL:)``).
    case restarting(goneURL: URL)
    /// What the ``TusUploadOptions/journal`` did.
    case journal(UploadJournalNotice)
}

/// The outcome of a finished tus upload.
public struct TusUploadResult: Sendable, Hashable {
    /// Where the upload lives on the server.
    public var uploadURL: URL
    /// Its length in bytes, all of which the server has confirmed.
    public var length: Int64
    /// The offset this call started from (0 for a new upload).
    public var startOffset: Int64
    /// The body bytes this call sent, including bytes sent again after failures.
    public var bytesSent: Int64
    /// The requests that failed and were retried.
    public var retries: Int
    /// The `Upload-Checksum` algorithm used, if any.
    public var checksumAlgorithm: String?
}
