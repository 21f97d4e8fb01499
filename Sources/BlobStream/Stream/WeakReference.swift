/// A weak reference that may cross concurrency domains.
///
/// Foundation marks `Stream` as never `Sendable`, yet a stream must hand callbacks to its
/// source and to dispatch queues. The stream guards its own state with locks, so passing a weak
/// reference to it across threads is safe; this wrapper says so to the compiler in one place.
struct WeakReference<Object: AnyObject>: @unchecked Sendable {
    weak var object: Object?

    init(_ object: Object) {
        self.object = object
    }
}
