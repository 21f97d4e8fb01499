extension BlobStreamError {
    /// The same error with the resource, path or URL it names replaced by `new` where that is
    /// `old`: a decorator that hands out another source's errors makes them name what its own
    /// caller asked for (``AssetDataSource`` renames its resolved source's errors), while names
    /// the inner source chose for something else (a file path) stay.
    func renamingResource(_ old: String, to new: String) -> BlobStreamError {
        let name = { (resource: String) in resource == old ? new : resource }
        switch self {
        case .notFound(let resource): return .notFound(resource: name(resource))
        case .isDirectory(let path): return .isDirectory(path: name(path))
        case .permissionDenied(let resource): return .permissionDenied(resource: name(resource))
        case .system(let resource, let operation, let offset, let code):
            return .system(resource: name(resource), operation: operation, offset: offset, errno: code)
        case .unexpectedEnd(let resource, let offset, let expected):
            return .unexpectedEnd(resource: name(resource), offset: offset, expectedLength: expected)
        case .sourceChanged(let resource, let offset, let reason):
            return .sourceChanged(resource: name(resource), offset: offset, reason: reason)
        case .invalidatedTooOften(let resource, let offset, let attempts):
            return .invalidatedTooOften(resource: name(resource), offset: offset, attempts: attempts)
        case .invalidOffset(let resource, let offset, let length):
            return .invalidOffset(resource: name(resource), offset: offset, length: length)
        case .timedOut(let resource, let operation, let seconds):
            return .timedOut(resource: name(resource), operation: operation, seconds: seconds)
        case .wouldDeadlock(let resource, let reason): return .wouldDeadlock(resource: name(resource), reason: reason)
        case .httpStatus(let url, let statusCode, let message): return .httpStatus(url: name(url), statusCode: statusCode, message: message)
        case .network(let url, let reason): return .network(url: name(url), reason: reason)
        case .unsupportedURL(let url, let reason): return .unsupportedURL(url: name(url), reason: reason)
        case .sourceFailed(let resource, let reason): return .sourceFailed(resource: name(resource), reason: reason)
        case .protocolViolation(let url, let reason): return .protocolViolation(url: name(url), reason: reason)
        case .notRegularFile(let path, let kind): return .notRegularFile(path: name(path), kind: kind)
        case .lengthExceeded(let resource, let length): return .lengthExceeded(resource: name(resource), length: length)
        case .notOpen, .closed, .wouldBlock, .cancelled: return self
        }
    }
}
