import BlobStream
import Synchronization
internal import SystemCalls

/// The version of the blob one upload reads, shared by every stream the upload opens on its
/// source. A ``BlobInputStream`` compares versions across its own reopens; an upload that
/// opens a new stream after a failure needs the same check across streams, or it would
/// continue with the bytes of another version, and the server would store a mix.
///
/// The first known version (``BlobSourceDescription/version``) is pinned. A later open
/// with another version, or with none at all, is
/// ``BlobStreamError/sourceChanged(resource:offset:reason:)``. Opens before any version is
/// known cannot be compared, so the first one that reports one is pinned.
final class VersionPin: Sendable {
    private let pinnedVersion = LockedValue<String?>(nil)
    /// Whether the pinned version came from an earlier run's record (``expect(_:)``).
    private let recorded = Atomic<Bool>(false)

    /// The pinned version, once one is known.
    var pinned: String? { pinnedVersion.withLock { $0 } }

    /// Pins `version` before any stream opened: the version an earlier run of the same upload
    /// recorded, which every stream of this run must then find.
    func expect(_ version: String) {
        pinnedVersion.withLock { pinned in
            if pinned == nil {
                pinned = version
                recorded.store(true, ordering: .relaxed)
            }
        }
    }

    /// Why an upload recorded (in a journal) as started from `version` cannot be continued
    /// with the version pinned now; `nil` when they are the same.
    func refusal(ofRecorded version: String) -> String? {
        guard let pinned, pinned != version else { return nil }
        return "the source changed since the upload started (it was version \"\(version)\", it is now \"\(pinned)\")"
    }

    /// Why `description`, just opened, is not the pinned version; `nil` when it is (or pins it).
    func mismatch(_ description: BlobSourceDescription, resource: String, offset: Int64) -> BlobStreamError? {
        let pinned = pinnedVersion.withLock { pinned -> String? in
            if pinned == nil { pinned = description.version }
            return pinned
        }
        guard let pinned, pinned != description.version else {
            // Matched: from now on a change is one seen in this run, and says so.
            recorded.store(false, ordering: .relaxed)
            return nil
        }
        let now = description.version.map { "\"\($0)\"" } ?? "unknown"
        guard !recorded.load(ordering: .relaxed) else {
            // A file's version names its device, inode and status-change time too: a copy, a
            // move to another disk or a chmod change it without changing a byte. Fail closed,
            // but say what is known.
            return .sourceChanged(
                resource: resource, offset: offset,
                reason: "the upload was started from version \"\(pinned)\" and the source is now \(now); its bytes may be "
                    + "the same (a copy, a move, a permission change), but that cannot be confirmed, and continuing could "
                    + "mix two versions")
        }
        return .sourceChanged(
            resource: resource, offset: offset,
            reason: "the upload started with version \"\(pinned)\", and a stream opened again finds \(now)")
    }
}

/// A data source that checks its version against the upload's ``VersionPin`` whenever it
/// opens; everything else goes to the source it wraps.
final class PinnedDataSource: ForwardingDataSource {
    let base: any BlobDataSource
    private let pin: VersionPin
    /// Where the stream over this source starts, for the error's offset.
    private let offset: Int64

    init(_ base: any BlobDataSource, pin: VersionPin, offset: Int64) {
        self.base = base
        self.pin = pin
        self.offset = offset
    }

    func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        open(at: offset, completion: completion)
    }

    /// Opens the base for a first read at `start`, and checks the version it reports.
    func open(
        at start: Int64, completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void
    ) {
        let (pin, offset, name) = (self.pin, self.offset, base.resourceName)
        base.open(at: start) { result in
            if case .success(let description) = result,
               let change = pin.mismatch(description, resource: name, offset: offset) {
                completion(.failure(change))
            } else {
                completion(result)
            }
        }
    }
}
