// The transport choice (`Transport`, `TLSTrust`, `MinimumSpeed`) lives below the stream module,
// shared with the upload clients; `import BlobStream` brings it, as NIO re-exports NIOCore.
@_exported import BlobTransport
