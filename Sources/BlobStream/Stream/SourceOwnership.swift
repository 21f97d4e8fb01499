import Synchronization
internal import SystemCalls

/// Which ``BlobInputStream`` a data source belongs to, across all the streams made over it.
///
/// A source outlives its streams: a ``BlobChunks`` iterated again, a request that reuses a
/// registered source, an upload that opens a new stream after a failure. A stream closed while
/// one of its source calls runs closes the source later, when that call returns; without an
/// owner, that late close (or a late open completion's close) would land on whichever stream
/// opened the source next. So every stream is a *tenant* with its own number:
/// - a stream takes the source when it opens; if another stream's close is pending or
///   running, the open waits for that close to end, then runs on the thread that ended it;
/// - a close runs only for the owner (or for anyone while nobody owns the source), so a
///   stream's deferred or late work never reaches the next stream;
/// - the owner gives the source up with its final close, or when it is freed.
///
/// Decorators (``ForwardingDataSource``) are seen through: two streams over two decorators of
/// one source share that source.
enum SourceOwnership {
    /// What is known of one source that a stream owns, closes or waits for.
    private struct Entry {
        /// Keeps the source alive, so its `ObjectIdentifier` names no other object meanwhile.
        let source: AnyObject
        var owner: Int?
        /// The owner was closed while a source call ran; its close comes when the call ends.
        var closePending = false
        /// Closes running now (a source may close again from inside its close).
        var closesRunning = 0
        /// Opens waiting for the close to end, in order, with their tenants.
        var waiting: [(tenant: Int, start: @Sendable () -> Void)] = []

        var isBusy: Bool { owner != nil && (closePending || closesRunning > 0) }
        var isUnused: Bool { owner == nil && closesRunning == 0 && waiting.isEmpty }
    }

    private static let entries = LockedValue<[ObjectIdentifier: Entry]>([:])
    private static let tenants = Atomic<Int>(0)

    /// A number no other stream has.
    static func newTenant() -> Int {
        tenants.add(1, ordering: .relaxed).newValue
    }

    /// The source the decorators around `source` end in.
    static func innermost(_ source: any BlobDataSource) -> any BlobDataSource {
        var inner = source
        while let decorator = inner as? any ForwardingDataSource { inner = decorator.base }
        return inner
    }

    /// Makes `tenant` the owner of `source` and runs `start` (which opens it): now, or, when
    /// another stream's close is pending or running, on the thread that ends that close.
    static func open(_ source: any BlobDataSource, by tenant: Int, start: @escaping @Sendable () -> Void) {
        let inner = innermost(source)
        let now = entries.withLock { entries -> Bool in
            var entry = entries[ObjectIdentifier(inner)] ?? Entry(source: inner)
            defer { entries[ObjectIdentifier(inner)] = entry }
            guard entry.isBusy else {
                entry.owner = tenant
                return true
            }
            entry.waiting.append((tenant, start))
            return false
        }
        if now { start() }
    }

    /// Notes that the owner `tenant` was closed and will close the source when its running
    /// call returns: an open until then waits for that close.
    static func closeIsPending(_ source: any BlobDataSource, by tenant: Int) {
        let key = ObjectIdentifier(innermost(source))
        entries.withLock { entries in
            guard entries[key]?.owner == tenant else { return }
            entries[key]?.closePending = true
        }
    }

    /// Closes the source for `tenant` with `close`, unless another stream has opened it since
    /// (then that stream's source is left alone). A `final` close gives the source up; the opens
    /// that waited for it then run, on this thread.
    static func close(_ source: any BlobDataSource, by tenant: Int, final: Bool, _ close: () -> Void) {
        let inner = innermost(source)
        let key = ObjectIdentifier(inner)
        let mine = entries.withLock { entries -> Bool in
            var entry = entries[key] ?? Entry(source: inner)
            guard entry.owner == nil || entry.owner == tenant else { return false }
            entry.owner = tenant
            entry.closesRunning += 1
            entries[key] = entry
            return true
        }
        guard mine else { return }
        close()
        let handedOver = entries.withLock { entries -> [@Sendable () -> Void] in
            guard var entry = entries[key] else { return [] }
            entry.closesRunning -= 1
            if final, entry.closesRunning == 0 {
                entry.owner = nil
                entry.closePending = false
            }
            return store(&entry, in: &entries, at: key)
        }
        handedOver.forEach { $0() }
    }

    /// Gives the source up without closing it: `tenant` was freed, or ended before its waiting
    /// open ran. Runs the opens that can run now.
    static func release(_ source: any BlobDataSource, by tenant: Int) {
        let key = ObjectIdentifier(innermost(source))
        let handedOver = entries.withLock { entries -> [@Sendable () -> Void] in
            guard var entry = entries[key] else { return [] }
            entry.waiting.removeAll { $0.tenant == tenant }
            if entry.owner == tenant, entry.closesRunning == 0 {
                entry.owner = nil
                entry.closePending = false
            }
            return store(&entry, in: &entries, at: key)
        }
        handedOver.forEach { $0() }
    }

    /// Stores `entry` (or forgets it when unused) after handing the source to the opens that
    /// waited, if it is free now; returns their starts, to run without the lock.
    private static func store(
        _ entry: inout Entry, in entries: inout [ObjectIdentifier: Entry], at key: ObjectIdentifier
    ) -> [@Sendable () -> Void] {
        var starts: [@Sendable () -> Void] = []
        if !entry.isBusy, !entry.waiting.isEmpty {
            // Each waiting open was refused only because of the close that has now ended.
            entry.owner = entry.waiting.last?.tenant
            entry.closePending = false
            starts = entry.waiting.map(\.start)
            entry.waiting = []
        }
        entries[key] = entry.isUnused ? nil : entry
        return starts
    }
}
