internal import SystemCalls

/// The read-once rule of the sequential sources (``PipeDataSource``,
/// ``AsyncSequenceDataSource``), as a decorator: its base is opened once, and read from its
/// first byte to its last, in order.
///
/// Bytes that can be read once cannot be read twice: an open after a successful one (a reopen,
/// a second pass) fails, and so does a read at any offset but the next one (a seek, a resume),
/// with ``BlobStreamError/sourceFailed(resource:reason:)`` instead of other bytes. An open that
/// failed read nothing and may be tried again. The base may assume every call it gets keeps
/// to this rule.
public final class ReadOnceDataSource: ForwardingDataSource {
    /// The sequential source.
    public let base: any BlobDataSource
    private let kind: String
    private let state = LockedValue(State())

    private struct State {
        var opening = false
        var opened = false
        var next: Int64 = 0
    }

    /// Reads `base` once, in order; `kind` names it in messages ("a pipe", "live data").
    public init(_ base: any BlobDataSource, kind: String) {
        self.base = base
        self.kind = kind
    }

    /// The offset of the next byte: how many bytes were read.
    public var reached: Int64 { state.withLock { $0.next } }

    /// Opens the base, the first time only.
    public func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        let first = state.withLock { state -> Bool in
            guard !state.opening, !state.opened else { return false }
            state.opening = true
            return true
        }
        guard first else {
            completion(.failure(.sourceFailed(resource: resourceName, reason: "\(kind) can be read only once; it cannot be opened again")))
            return
        }
        base.open { [self] result in
            state.withLock { state in
                state.opening = false
                if case .success = result { state.opened = true }
            }
            completion(result)
        }
    }

    /// Opens the base, the first time only; a first read at `offset` other than 0 fails.
    public func open(
        at offset: Int64, completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void
    ) {
        open(completion: completion)
    }

    /// Reads the base at `offset`, which must be the next byte.
    public func read(
        into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, whenReadable: @escaping @Sendable () -> Void
    ) -> BlobSourceReadResult {
        let next = state.withLock { $0.next }
        guard offset == next else {
            return .failed(.sourceFailed(
                resource: resourceName,
                reason: "\(kind) is read once and in order: offset \(offset) was asked, but the next byte is at offset \(next)"))
        }
        let result = base.read(into: buffer, at: offset, whenReadable: whenReadable)
        if case .read(let count) = result {
            state.withLock { $0.next = offset + Int64(count) }
        }
        return result
    }
}
