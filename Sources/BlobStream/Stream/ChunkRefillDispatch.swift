/// Whether the refill that ``BlobChunks`` queues after taking a block of an immediate source
/// (``BlobDataSource/readsImmediately``) goes to the work queue at once.
///
/// On the work queue, the source reads the next block while the consumer works on this one.
/// A consumer that comes back before the work queue started the refill runs it itself (it
/// claims it), and the thread woken for it finds nothing to do: at 1 MiB per block and page-
/// cache speed, that wake-up cost about 6% of a consumer that only counts bytes. So after
/// ``lazyAfterClaims`` such claims in a row the refill stays queued for the consumer to claim,
/// and only every ``probeEvery``-th goes to the work queue, to notice a consumer that slowed
/// down: once the work queue runs one, every refill goes there again.
struct ChunkRefillDispatch {
    static let lazyAfterClaims = 2
    static let probeEvery = 8

    /// The consumer claimed this many queued refills in a row.
    private(set) var consumerClaims = 0
    /// Refills kept back since the last one sent to the work queue.
    private var keptBack = 0

    /// Whether the consumer claims the refills, so they are not sent to the work queue.
    var isLazy: Bool { consumerClaims >= Self.lazyAfterClaims }

    /// Whether the refill queued now is sent to the work queue.
    mutating func sendsNext() -> Bool {
        guard isLazy else { return true }
        keptBack += 1
        guard keptBack >= Self.probeEvery else { return false }
        keptBack = 0
        return true
    }

    /// The consumer claimed a queued refill itself.
    mutating func consumerClaimed() {
        consumerClaims += 1
    }

    /// The work queue ran a queued refill before the consumer came back for it.
    mutating func workQueueRan() {
        consumerClaims = 0
        keptBack = 0
    }
}
