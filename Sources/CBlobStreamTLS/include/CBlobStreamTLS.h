#ifndef CBLOBSTREAMTLS_H
#define CBLOBSTREAMTLS_H

// TLS client sessions over a non-blocking socket, from the system's OpenSSL 3 (libssl.so.3).
// The Swift side (HTTP1's TLSSession) owns the waiting: every call here returns at once with
// bytes, or says which readiness it needs (BS_TLS_WANT_READ / BS_TLS_WANT_WRITE).
//
// Built only where OpenSSL is (Linux); elsewhere this header declares nothing and
// BS_TLS_AVAILABLE is 0, and https: goes through URLSession.

#include <stddef.h>

#if defined(__linux__) && __has_include(<openssl/ssl.h>)
#define BS_TLS_AVAILABLE 1

#ifdef __cplusplus
extern "C" {
#endif

/// What a session call returns when it moved no bytes.
enum {
    /// Done (a handshake), or nothing to report.
    BS_TLS_OK = 0,
    /// Failed for good; the error text says why.
    BS_TLS_ERROR = -1,
    /// Call again once the socket is readable.
    BS_TLS_WANT_READ = -2,
    /// Call again once the socket is writable.
    BS_TLS_WANT_WRITE = -3,
    /// The peer ended the TLS session properly (close_notify): the end of its data.
    BS_TLS_CLOSED = -4,
    /// The connection ended without close_notify: the data may have been cut short.
    BS_TLS_TRUNCATED = -5,
    /// The connection broke during the handshake (a reset, a close, a socket error): not a
    /// refusal of the peer, so a new connection may succeed.
    BS_TLS_LOST = -6,
    /// The peer refused this client with a fatal alert after the handshake (TLS 1.3 servers
    /// judge a client certificate then): final, as a refusal during the handshake is.
    BS_TLS_REFUSED = -7,
};

/// A client configuration: trust, protocol versions, ALPN. Shared by many sessions, any thread.
typedef struct bs_tls_context bs_tls_context;
/// One TLS session on one socket, used by one thread at a time.
typedef struct bs_tls bs_tls;

/// A client context that verifies peers, speaks TLS 1.2 or later and offers ALPN http/1.1.
/// Trust: only the PEM certificates of `ca_file` when it is not NULL (curl's --cacert);
/// otherwise OpenSSL's default store, which honours SSL_CERT_FILE and SSL_CERT_DIR.
/// NULL on failure, with the reason in `error`.
bs_tls_context *bs_tls_context_create(const char *ca_file, char *error, size_t error_size);
void bs_tls_context_free(bs_tls_context *context);

/// A session on the connected socket `fd` (not owned) for `host`: SNI for a host name, and the
/// certificate checked against the name or the IP address. NULL on failure, with `error`.
bs_tls *bs_tls_create(bs_tls_context *context, int fd, const char *host, char *error, size_t error_size);
void bs_tls_free(bs_tls *session);

/// One step of the handshake: BS_TLS_OK when done, BS_TLS_WANT_*, or BS_TLS_ERROR (a
/// certificate refused, a protocol version not offered...) with `error`.
int bs_tls_handshake(bs_tls *session, char *error, size_t error_size);

/// Decrypts up to `length` bytes into `buffer`: a count > 0, or BS_TLS_WANT_*, BS_TLS_CLOSED,
/// BS_TLS_TRUNCATED (the socket ended without close_notify), BS_TLS_ERROR (with `error`: a
/// bad record, an alert, a socket error such as a reset). A failure met after some bytes is
/// returned by the next call.
long bs_tls_read(bs_tls *session, void *buffer, size_t length, char *error, size_t error_size);

/// Encrypts and sends up to `length` bytes of `buffer` (no copy of them beforehand; the records
/// leave in sends of up to 128 KiB): a count > 0 of the first bytes whose records are with the
/// kernel, or BS_TLS_WANT_*, BS_TLS_ERROR (with `error`). The next call must pass the bytes
/// after that count, or after a BS_TLS_WANT_* the same bytes (from another address if need
/// be): records already made from them may be waiting, and it counts them as they leave.
long bs_tls_write(bs_tls *session, const void *buffer, size_t length, char *error, size_t error_size);

/// The bytes ever received from the socket, records whole or not: what a minimum speed
/// counts, as it counts a plain connection's (a slow peer completes a 16 KiB record rarely).
unsigned long long bs_tls_received(bs_tls *session);

/// Whether application data (or an end of the session) is waiting, without blocking: 1 yes,
/// 0 no. Handshake messages after the handshake (TLS 1.3 session tickets) are consumed.
int bs_tls_has_input(bs_tls *session);

#ifdef __cplusplus
}
#endif

#else
#define BS_TLS_AVAILABLE 0
#endif

#endif
