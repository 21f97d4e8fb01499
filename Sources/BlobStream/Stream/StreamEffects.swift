import Foundation

/// What a ``StreamMachine`` transition asks the stream to do. Events and the note that a
/// close is pending are carried out before the stream's lock is released (so events keep the
/// order of the transitions, and no new stream's open can slip in before the note); the rest
/// after it, in the order of the fields (the wake too, unless nothing else is left to do
/// unlocked inside a longer run: ``BlobInputStream/settle(_:)``).
struct StreamEffects {
    /// Events for the delegate, in order: at most three per transition.
    var events = EventList()
    /// Wake the threads waiting on the stream's condition.
    var wake = false
    /// Tell ``SourceOwnership`` that the source's close waits for a call in flight.
    var closeIsPending = false
    /// Drop the event targets and tell the observer: the stream closed.
    var stopEvents = false
    /// Close the source; `true`: for good (the stream is closed), giving it up.
    private(set) var closeSource: Bool?
    /// Run the refill queued under this ticket on the work queue.
    var scheduleRefill: Int?

    mutating func post(_ event: Stream.Event) {
        events.append(event)
    }

    /// Asks for the source's close; two asks in one transition are one close, final if either is.
    mutating func closeSource(final: Bool) {
        closeSource = (closeSource ?? false) || final
    }

    /// Whether anything is left once the lock is released.
    var hasUnlockedWork: Bool { stopEvents || closeSource != nil || scheduleRefill != nil }
}

/// Up to three events, without an allocation on the read path.
struct EventList {
    private var first: Stream.Event?
    private var second: Stream.Event?
    private var third: Stream.Event?

    var isEmpty: Bool { first == nil }

    mutating func append(_ event: Stream.Event) {
        if first == nil { first = event } else if second == nil { second = event } else {
            precondition(third == nil, "a stream transition posts at most three events")
            third = event
        }
    }

    func forEach(_ body: (Stream.Event) -> Void) {
        guard let first else { return }
        body(first)
        guard let second else { return }
        body(second)
        if let third { body(third) }
    }
}

/// A section that one thread at a time may be in, as a recursive lock would allow, kept in the
/// stream's state so that its one condition serves every wait. `holder` is a thread's
/// ``Turn/currentThread`` number.
struct Turn {
    private(set) var holder: UInt?
    private var depth = 0

    /// Whether `thread` may enter now (nobody is inside, or it is itself).
    func admits(_ thread: UInt) -> Bool {
        holder == nil || holder == thread
    }

    /// Enters for `thread`; the caller checked ``admits(_:)``.
    mutating func enter(_ thread: UInt) {
        precondition(admits(thread))
        holder = thread
        depth += 1
    }

    /// Leaves once; returns whether the section became free (waiters must be woken).
    mutating func leave() -> Bool {
        depth -= 1
        guard depth == 0 else { return false }
        holder = nil
        return true
    }

    /// The calling thread's number.
    static var currentThread: UInt {
        #if canImport(Darwin)
        UInt(bitPattern: pthread_self())
        #else
        UInt(pthread_self())
        #endif
    }
}
