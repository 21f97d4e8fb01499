import Foundation

/// A `Foundation.InputStream` over any ``BlobDataSource``: a file, an asset store, an HTTP
/// server. Give it to `URLRequest.httpBodyStream`, a checksum calculator, or anything else that
/// takes an `InputStream`.
///
/// ## Modes
/// - ``Mode/synchronous`` (the default, and what URLSession needs): `open()` returns once the
///   source is open (status `.open`, `.atEnd` for nothing to read, or `.error`); `read` blocks
///   until at least one byte, the real end (0) or an error (-1); `hasBytesAvailable` is `true`
///   until the real end of data, even after an error, so a consumer that stops when it turns
///   false never mistakes a failure for the end.
/// - ``Mode/asynchronous``: nothing blocks. `open()` returns with `.opening`; the delegate hears
///   `.openCompleted`, then `.hasBytesAvailable` whenever bytes can be read without waiting;
///   `hasBytesAvailable` says whether they can. A read when none can returns -1 with
///   ``BlobStreamError/wouldBlock(offset:)`` in ``blobError`` and does not end the stream.
///
/// ## Events
/// Delivered only when the stream is scheduled in a run loop (`schedule(in:forMode:)`, on that
/// run loop's thread) and/or has a ``delegateQueue``; never after `close()`. Per destination,
/// events are serial and ordered: `.openCompleted` first (or `.errorOccurred` if the open
/// fails), then `.hasBytesAvailable` when bytes become readable after the open, after every read
/// that leaves bytes, and when new bytes arrive, and finally exactly one `.endEncountered` or
/// `.errorOccurred` per pass. A `.hasBytesAvailable` that is still waiting absorbs the next one.
///
/// After a seek (see Offsets): a seek to the end posts `.endEncountered` unless the stream is
/// already at its end, where it changes nothing and posts nothing. A seek back from the end
/// starts a new pass: the status returns to `.open`, `.hasBytesAvailable` follows (at once in
/// synchronous mode, once bytes are cached in asynchronous mode), and reaching the end again
/// posts `.endEncountered` again. A refused seek posts nothing.
///
/// ## Offsets
/// `setProperty(NSNumber(value: n), forKey: .fileCurrentOffsetKey)` before `open()` starts at
/// byte `n` (to resume an upload); after `open()` it seeks. Values that are no whole number of
/// bytes (1.5, NaN, negative, beyond `Int64.max`), and offsets past a known length, are refused
/// with `false`; a start offset past the end fails the open with
/// ``BlobStreamError/invalidOffset(resource:offset:length:)``. When the source cannot announce
/// a length, the end found by a pass counts as the length from then on: later seeks past it are
/// refused, and a later pass that ends sooner fails with
/// ``BlobStreamError/unexpectedEnd(resource:offset:expectedLength:)``.
///
/// ## Invalidation
/// When the source reports that its handle went stale, the stream closes it, opens it again
/// and continues at the same byte (the reader waits in synchronous mode; nothing blocks in
/// asynchronous mode). ``maxConsecutiveReopens`` bounds the attempts made without progress.
///
/// ## Detecting a changed source
/// Every reopen compares the new ``BlobSourceDescription`` with the one of the first open, and
/// fails with ``BlobStreamError/sourceChanged(resource:offset:reason:)`` rather than mix data
/// when:
/// - the `length` differs (a known length that became unknown, or the reverse, included); or
/// - the first open named a version and the reopen names another one or none.
///   A source that named no version at its first open can only be checked by its length.
///
/// Between reopens, the source itself is asked: once per pass to the end, after the last byte
/// has come from the source and before that byte (known length) or the end (unknown length)
/// reaches the consumer, the stream calls ``BlobDataSource/confirmUnchanged(at:)``. An error
/// from it ends the stream with that error: the read that would have delivered the final bytes
/// or the end returns -1 and `.errorOccurred` replaces `.endEncountered`. A pass that reads no
/// byte (an empty blob, a start or seek at the end) has nothing to confirm; a seek back and a
/// new pass to the end confirm again.
///
/// ## Threads
/// Every member may be called from any thread. `close()` from another thread makes a blocked
/// synchronous read return -1 promptly.
public final class BlobInputStream: InputStream, PositionedInputStream, EventDrivenStream {
    /// How the stream waits for its source.
    public enum Mode: Sendable {
        /// `open` and `read` block until the source answers. What URLSession needs.
        case synchronous
        /// Nothing blocks; progress is reported through delegate events.
        case asynchronous
    }

    /// The source this stream reads.
    public let dataSource: any BlobDataSource
    /// The mode chosen at creation.
    public let mode: Mode

    /// The least number of bytes the stream asks its source for at once (fewer only where the
    /// blob ends sooner), as the ``BlobDataSource`` contract promises. Reads smaller than this
    /// are served from a cache of this size, which is topped up when it runs dry part way through
    /// a read, so a read just under the block size is not cut short; synchronous reads of at least
    /// this size (or of every byte left) go straight into the caller's buffer, without a copy.
    /// Set it before `open()`; later changes are ignored.
    ///
    /// Defaults to the source's ``BlobDataSource/preferredBlockSize``; in asynchronous mode over
    /// a source whose reads are not immediate (``BlobDataSource/readsImmediately``), to at least
    /// ``minimumAsynchronousBlockSize``, since every byte is then copied out of the cache anyway
    /// and larger blocks mean fewer source calls per event (measured with `blob-bench`).
    /// Asynchronous reads of an immediate source with room for a block go straight into the
    /// caller's buffer too.
    public var blockSize: Int {
        get { lock.withLock { configuredBlockSize } }
        set { lock.withLock { configuredBlockSize = max(1, newValue) } }
    }

    /// 256 KiB: the smallest default block in asynchronous mode.
    public static let minimumAsynchronousBlockSize = 256 * 1024

    /// How long a synchronous open, or a synchronous reader's reopen after invalidation, may
    /// wait for the source before failing with ``BlobStreamError/timedOut(resource:operation:seconds:)``.
    /// 30 s. An asynchronous stream never waits, so it relies on its source's own time-outs
    /// (``HTTPDataSource`` has request and idle time-outs) to report a stalled peer.
    public var openTimeout: TimeInterval {
        get { lock.withLock { configuredOpenTimeout } }
        set { lock.withLock { configuredOpenTimeout = newValue } }
    }

    /// How long a synchronous read may wait for a source that has no bytes yet before failing
    /// with ``BlobStreamError/timedOut(resource:operation:seconds:)``. 300 s; sources with their
    /// own timeouts (HTTP) usually report sooner. Asynchronous streams do not wait (see
    /// ``openTimeout``).
    public var readTimeout: TimeInterval {
        get { lock.withLock { configuredReadTimeout } }
        set { lock.withLock { configuredReadTimeout = newValue } }
    }

    /// How many times in a row the source may go stale without the stream making progress
    /// before the stream fails with ``BlobStreamError/invalidatedTooOften(resource:offset:attempts:)``. 5.
    public var maxConsecutiveReopens: Int {
        get { lock.withLock { configuredMaxReopens } }
        set { lock.withLock { configuredMaxReopens = max(0, newValue) } }
    }

    /// The queue that delegate events are delivered on, in addition to any scheduled run loops.
    /// Events on it are serial even if the queue is concurrent. `nil` (the default): none.
    public var delegateQueue: DispatchQueue? {
        get { lock.withLock { configuredDelegateQueue } }
        set {
            lock.withLock { configuredDelegateQueue = newValue }
            dispatcher.setQueue(newValue)
        }
    }

    /// The blob's length in bytes once the stream is open, if the source knows it.
    public var length: Int64? { lock.withLock { machine.description?.length } }

    /// The offset of the next byte `read` returns.
    public var offset: Int64 { lock.withLock { machine.offset } }

    /// The source's ``BlobDataSource/resourceName``: the path, URL or identifier.
    public var resourceName: String { dataSource.resourceName }

    /// Always `true`: `close()` may come from any thread and wakes a blocked read.
    public var closesFromAnyThread: Bool { true }

    /// Itself in asynchronous mode, whose events say when it can be read.
    package var eventSource: BlobInputStream? { mode == .asynchronous ? self : nil }

    /// The typed form of ``streamError``.
    public var blobError: BlobStreamError? { lock.withLock { machine.error } }

    // MARK: State

    /// The stream's one lock: guards `machine` and the configuration; its condition is the one
    /// every waiting call (a synchronous open, read or reopen, a reader waiting for its turn,
    /// a close waiting out a delivery) waits on.
    let lock = NSCondition()
    /// Everything the stream knows, and every decision it makes (see ``StreamMachine``).
    var machine: StreamMachine
    /// This stream's number as a user of its source (``SourceOwnership``): what it defers past
    /// its close reaches only its own use of the source, never the next stream's.
    let sourceTenant = SourceOwnership.newTenant()
    /// The `whenReadable` callback handed to the source, made once rather than on every read.
    private(set) var signalSource: @Sendable () -> Void = {}
    /// Where asynchronous refills run after a source calls back, off the source's own thread:
    /// serial per stream, on one of the few ``SharedWorkQueues``, so hundreds of streams share
    /// a few threads instead of each getting one of its own.
    let workQueue = DispatchQueue(label: "BlobInputStream.refill", target: SharedWorkQueues.next())
    let dispatcher = StreamEventDispatcher()

    var configuredBlockSize: Int
    var configuredOpenTimeout: TimeInterval = 30
    var configuredReadTimeout: TimeInterval = 300
    var configuredMaxReopens = 5
    private var configuredDelegateQueue: DispatchQueue?
    private weak var configuredDelegate: (any StreamDelegate)?

    // MARK: Creating streams

    /// Creates a stream over `dataSource`. Nothing is opened until `open()`.
    /// - Parameters:
    ///   - dataSource: Where the bytes come from; the stream becomes its only caller.
    ///   - mode: ``Mode/synchronous`` (default) or ``Mode/asynchronous``.
    public init(dataSource: any BlobDataSource, mode: Mode = .synchronous) {
        self.dataSource = dataSource
        self.mode = mode
        let preferred = max(1, dataSource.preferredBlockSize)
        let immediate = dataSource.readsImmediately
        configuredBlockSize = mode == .asynchronous && !immediate ? max(preferred, Self.minimumAsynchronousBlockSize) : preferred
        machine = StreamMachine(mode: mode, resource: dataSource.resourceName, immediateSource: immediate)
        super.init(data: Data())
        let stream = WeakReference(self)
        signalSource = { stream.object?.transition { machine, effects in machine.sourceSignalled(&effects) } }
        dispatcher.deliver = { event in stream.object?.deliverToDelegate(event) }
    }

    /// Creates a stream over the file at `path` (a ``FileDataSource``). A missing or unreadable
    /// file is reported when the stream opens, naming the path.
    public convenience init(fileAtPath path: String, mode: Mode = .synchronous) {
        self.init(dataSource: FileDataSource(path: path), mode: mode)
    }

    /// Creates a stream for `url` through ``BlobURLRegistry/shared`` (`file:` and every
    /// registered scheme), or returns `nil` when no data source can be made for it. Use
    /// ``make(url:mode:registry:)`` to learn why.
    public convenience init?(url: URL, mode: Mode = .synchronous) {
        guard let source = try? BlobURLRegistry.shared.dataSource(for: url) else { return nil }
        self.init(dataSource: source, mode: mode)
    }

    /// Creates a stream for `url` through `registry`.
    /// - Throws: ``BlobStreamError/unsupportedURL(url:reason:)`` for an unknown scheme or a
    ///   malformed URL, or whatever the scheme's factory throws.
    public static func make(
        url: URL,
        mode: Mode = .synchronous,
        registry: BlobURLRegistry = .shared
    ) throws(BlobStreamError) -> BlobInputStream {
        BlobInputStream(dataSource: try registry.dataSource(for: url), mode: mode)
    }

    deinit {
        dispatcher.removeAll()
        if machine.holdsSource { closeSource(final: true) }
        SourceOwnership.release(dataSource, by: sourceTenant)
    }

    // MARK: Stream

    /// Opens the source: see ``Mode`` for what each mode waits for. Does nothing unless the
    /// stream has never been opened.
    public override func open() {
        openStream()
    }

    /// Closes the source and stops events. Idempotent; a blocked synchronous read on another
    /// thread returns -1 with ``BlobStreamError/closed``.
    public override func close() {
        closeStream()
    }

    /// The object that receives events (held weakly). See the type's documentation for when
    /// events are delivered.
    public override var delegate: (any StreamDelegate)? {
        get { lock.withLock { configuredDelegate } }
        set { lock.withLock { configuredDelegate = newValue } }
    }

    /// `.notOpen`, `.opening`, `.open`, `.reading` (during a synchronous read), `.atEnd`,
    /// `.closed` or `.error`.
    public override var streamStatus: Stream.Status {
        lock.withLock { machine.status }
    }

    /// The ``BlobStreamError`` that stopped the stream, or that made the last read return -1.
    public override var streamError: (any Error)? {
        blobError
    }

    /// Delivers events on `aRunLoop`'s thread while it runs in `mode`. Keeps a timer in that
    /// mode so the run loop waits for events instead of returning at once.
    public override func schedule(in aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {
        dispatcher.add(aRunLoop, mode: mode)
    }

    /// Stops delivering events on `aRunLoop` in `mode`.
    public override func remove(from aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {
        dispatcher.remove(aRunLoop, mode: mode)
    }

    /// The current offset for `.fileCurrentOffsetKey` (an `NSNumber`); `nil` for other keys.
    public override func property(forKey key: Stream.PropertyKey) -> AnyObject? {
        guard key == .fileCurrentOffsetKey else { return nil }
        return NSNumber(value: offset)
    }

    /// Sets the offset for `.fileCurrentOffsetKey` (see the type's documentation on offsets).
    /// Returns `false` for any other key, a value that is not a whole number (`1.5`, NaN, an
    /// infinity), a negative offset, one beyond `Int64.max`, an offset past a known length, or
    /// a closed or failed stream. `7.0` is the whole number 7.
    public override func setProperty(_ property: AnyObject?, forKey key: Stream.PropertyKey) -> Bool {
        guard key == .fileCurrentOffsetKey, let number = property as? NSNumber,
              let offset = Self.offset(from: number) else { return false }
        return move(to: offset) == nil
    }

    // MARK: InputStream

    /// Reads up to `len` bytes into `buffer`: see ``Mode`` for when it blocks. Returns the number
    /// of bytes read, 0 only at the real end of data, or -1 with ``blobError`` set.
    public override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int {
        guard len > 0 else { return 0 }
        let destination = UnsafeMutableRawBufferPointer(start: buffer, count: len)
        switch mode {
        case .synchronous: return readSynchronously(into: destination)
        case .asynchronous: return readAsynchronously(into: destination)
        }
    }

    /// Always `false`: bytes are copied out by `read`, never lent.
    public override func getBuffer(
        _ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>,
        length len: UnsafeMutablePointer<Int>
    ) -> Bool {
        false
    }

    /// Synchronous mode: `true` until the real end of data (also after an error, so that the
    /// next read reports it). Asynchronous mode: whether a read can return bytes without waiting.
    public override var hasBytesAvailable: Bool {
        lock.withLock {
            switch mode {
            case .synchronous: return machine.phase != .atEnd
            case .asynchronous: return machine.cache.count > 0 || machine.fillsOnDemandNow
            }
        }
    }

    // MARK: Delivery

    /// Hands `event` to the delegate, one delivery at a time, and none once the stream is
    /// closed: `close()` waits out a delivery in progress (see ``closeStream()``).
    private func deliverToDelegate(_ event: Stream.Event) {
        let thread = Turn.currentThread
        lock.lock()
        wait { $0.delivery.admits(thread) }
        machine.delivery.enter(thread)
        let delegate = machine.phase.isClosed ? nil : configuredDelegate
        lock.unlock()
        delegate?.stream(self, handle: event)
        lock.lock()
        if machine.delivery.leave() { lock.broadcast() }
        lock.unlock()
    }
}
