#if canImport(CBlobStreamTLS) && os(Linux)
internal import CBlobStreamTLS
internal import SystemCalls

/// One TLS client session on a connected, non-blocking socket: the record layer between
/// ``HTTP1Connection`` and the socket. Every call returns at once; the connection does the
/// waiting (`poll` on the socket and its cancellation pipe, until its deadline), so a TLS
/// connection is cancelled and timed exactly as a plain one. Used by one thread at a time.
final class TLSSession: @unchecked Sendable {
    private let pointer: OpaquePointer
    /// Keeps the socket open as long as the session refers to it.
    private let socket: FileDescriptor
    private var error = [CChar](repeating: 0, count: 512)

    /// A session for `host` on `socket`.
    init(context: TLSContext, socket: FileDescriptor, host: String) throws(HTTP1Error) {
        var error = [CChar](repeating: 0, count: 512)
        guard let pointer = bs_tls_create(context.pointer, socket.lentRawValue, host, &error, error.count) else {
            throw .network(reason: Self.text(error), cause: .secureConnectionFailed)
        }
        self.pointer = pointer
        self.socket = socket
    }

    deinit {
        bs_tls_free(pointer)
    }

    /// One step of the handshake.
    /// - Throws: ``HTTP1Error/network(reason:cause:)`` with
    ///   ``HTTP1Error/NetworkCause/secureConnectionFailed``: a refused certificate (its reason
    ///   in OpenSSL's words: "certificate has expired", "hostname mismatch"), a version the
    ///   server does not offer.
    func handshake() throws(HTTP1Error) -> ChannelStep {
        let result = bs_tls_handshake(pointer, &error, error.count)
        switch result {
        case Int32(BS_TLS_OK): return .done(0)
        default: return try step(Int(result), operation: "handshake")
        }
    }

    /// Decrypts into `buffer`.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(HTTP1Error) -> ChannelStep {
        try step(bs_tls_read(pointer, buffer.baseAddress, buffer.count, &error, error.count), operation: "read")
    }

    /// Encrypts and sends what it can of `bytes`, straight from them.
    func write(_ bytes: UnsafeRawBufferPointer) throws(HTTP1Error) -> ChannelStep {
        try step(bs_tls_write(pointer, bytes.baseAddress, bytes.count, &error, error.count), operation: "write")
    }

    /// Whether application data, or the session's end, is waiting; never blocks.
    var hasInput: Bool { bs_tls_has_input(pointer) != 0 }

    /// The bytes ever received from the socket, whole records or not.
    var bytesReceived: UInt64 { UInt64(bs_tls_received(pointer)) }

    private func step(_ result: Int, operation: String) throws(HTTP1Error) -> ChannelStep {
        switch result {
        case 1...: return .done(result)
        case Int(BS_TLS_WANT_READ): return .wait(.readable)
        case Int(BS_TLS_WANT_WRITE): return .wait(.writable)
        case Int(BS_TLS_CLOSED): return .closed
        case Int(BS_TLS_TRUNCATED):
            throw .network(reason: "the TLS connection ended without close_notify: the data may have been cut short", cause: .lost)
        case Int(BS_TLS_REFUSED):
            // The peer refused this client after the handshake: as final as a refusal during it.
            throw .network(reason: Self.text(error), cause: .secureConnectionFailed)
        case Int(BS_TLS_LOST):
            // The connection broke during the handshake: retried like any dropped connection.
            throw .network(reason: Self.text(error), cause: .lost)
        default:
            let text = Self.text(error)
            // A refusal during the handshake is final; a failure later breaks this connection only.
            throw .network(reason: text, cause: operation == "handshake" ? .secureConnectionFailed : .lost)
        }
    }

    private static func text(_ error: [CChar]) -> String {
        String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
#endif
