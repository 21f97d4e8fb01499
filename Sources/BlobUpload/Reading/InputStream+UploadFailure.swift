import BlobStream
import Foundation

extension InputStream {
    /// What this stream failed with, as an upload error about `resource`: a positioned stream's
    /// typed ``BlobStreamError`` (which names its own resource and offset), else the stream's
    /// `streamError` text, with `offset` when the reader knows it.
    func uploadFailure(resource: String, at offset: Int64?) -> BlobUploadError {
        if let typed = self as? any TypedErrorStream, let error = typed.blobError {
            return .source(error)
        }
        // Foundation's `streamError` getter traps on Linux when there is no error.
        let reason = (streamStatus == .error ? streamError?.localizedDescription : nil) ?? "the stream failed"
        return .source(.sourceFailed(resource: resource, reason: offset.map { "\(reason) (at offset \($0))" } ?? reason))
    }
}
