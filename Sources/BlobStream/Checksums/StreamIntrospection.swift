import Foundation

// What the checksum code needs to know about a stream it did not create: a name for error
// messages, the error in typed form, and how many bytes remain. BlobInputStream knows all of
// them; Foundation's streams know little, and their `streamError` getter traps on Linux when
// there is no error, so it is read only in the `.error` state.

extension InputStream {
    /// The path, URL or identifier the stream reads, for error messages.
    var checksumResourceName: String {
        switch self {
        case let blob as BlobInputStream: return blob.dataSource.resourceName
        case let hashing as HashingInputStream: return hashing.base.checksumResourceName
        default: return "input stream"
        }
    }

    /// Why the last operation failed, as a ``BlobStreamError``, or `nil` if the stream reports
    /// no error.
    var checksumTypedError: BlobStreamError? {
        switch self {
        case let blob as BlobInputStream: return blob.blobError
        case let hashing as HashingInputStream: return hashing.blobError
        default:
            guard streamStatus == .error, let error = streamError else { return nil }
            return BlobStreamError(foundationStreamError: error, resource: checksumResourceName)
        }
    }

    /// Whether `close()` may be called from another thread while a read is in progress (a
    /// ``BlobInputStream`` promises it; Foundation's streams do not).
    var checksumClosesFromAnyThread: Bool {
        switch self {
        case is BlobInputStream: return true
        case let hashing as HashingInputStream: return hashing.base.checksumClosesFromAnyThread
        default: return false
        }
    }

    /// The bytes between the current position and the end, when the stream knows them.
    var checksumRemainingLength: Int64? {
        switch self {
        case let blob as BlobInputStream: return blob.length.map { max(0, $0 - blob.offset) }
        case let hashing as HashingInputStream: return hashing.base.checksumRemainingLength
        default: return nil
        }
    }
}

extension BlobStreamError {
    /// The typed form of an error of one of Foundation's own streams.
    init(foundationStreamError error: any Error, resource: String) {
        if let typed = error as? BlobStreamError {
            self = typed
            return
        }
        let nsError = error as NSError
        if nsError.domain == NSPOSIXErrorDomain {
            switch Int32(nsError.code) {
            case ENOENT: self = .notFound(resource: resource)
            case EISDIR: self = .isDirectory(path: resource)
            case EACCES, EPERM: self = .permissionDenied(resource: resource)
            default: self = .system(resource: resource, operation: "read", offset: nil, errno: Int32(nsError.code))
            }
            return
        }
        self = .sourceFailed(resource: resource, reason: nsError.localizedDescription)
    }
}
