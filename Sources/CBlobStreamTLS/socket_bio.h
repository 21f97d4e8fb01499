#ifndef BS_SOCKET_BIO_H
#define BS_SOCKET_BIO_H

#include <stddef.h>
#include <openssl/bio.h>

// A BIO over a non-blocking socket that sends with MSG_NOSIGNAL (OpenSSL's own socket BIO
// writes with write(2), which raises SIGPIPE when the peer has gone), and gathers the records
// of one bs_tls_write into sends of up to BS_TLS_SEND_BUFFER bytes: one send(2) per 16 KiB
// record cost a system call and a TCP segment each, a fifth of an upload's CPU. Bytes it holds
// leave by BIO_flush, which bs_tls_write and OpenSSL's handshake call.

typedef struct {
    int fd;
    unsigned char *bytes;
    size_t start, end;
    /// Bytes ever appended, and ever sent: where a record's end lies against what left.
    unsigned long long appended, sent;
    /// Bytes ever received from the socket: a download's progress before its records are whole.
    unsigned long long received;
} bs_bio_state;

/// Sends what the BIO holds: 1 when all of it left, 0 when the socket is full (retry set), -1
/// on an error (errno).
int bs_bio_send_held(BIO *bio, bs_bio_state *state);

/// The method of these BIOs, made once.
BIO_METHOD *bs_socket_bio_method(void);

#endif
