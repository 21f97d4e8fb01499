import BlobStream

/// The progress of an upload: bytes the server confirmed (tus) or the connection took
/// (streamed requests), and the body's length when known.
public typealias UploadProgress = TransferProgress
