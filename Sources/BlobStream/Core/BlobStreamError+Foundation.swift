import Foundation

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
