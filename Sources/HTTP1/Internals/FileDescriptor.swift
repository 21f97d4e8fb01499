import Synchronization

/// A descriptor that closes itself exactly once: at ``close()`` or at the end of its life,
/// whichever comes first. Closing twice could close a descriptor of the same number that
/// another thread opened in between.
final class FileDescriptor: Sendable {
    /// The descriptor number; not usable after ``close()``.
    let rawValue: Int32
    private let closed = Atomic<Bool>(false)

    /// Takes ownership of `rawValue`.
    init(_ rawValue: Int32) {
        self.rawValue = rawValue
    }

    deinit {
        close()
    }

    /// Closes the descriptor, if this is the first call.
    func close() {
        if !closed.exchange(true, ordering: .acquiringAndReleasing) {
            systemClose(rawValue)
        }
    }
}
