#include "CBlobStreamTLS.h"

#if BS_TLS_AVAILABLE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include "socket_bio.h"

struct bs_tls_context {
    SSL_CTX *ctx;
};

// How many records of one bs_tls_write are followed to the socket (16 KiB each at most, so
// a 128 KiB batch of full records needs 9); a write of more, smaller records stops there.
#define BS_TLS_MARKS 64

struct bs_tls {
    SSL *ssl;
    /// Bytes of the caller's buffer already encrypted whose records wait in the BIO for the
    /// socket: counted back to the caller as their records leave (as OpenSSL does for a
    /// record it could not send).
    size_t consumed;
    /// How many of `consumed` were counted back already.
    size_t reported;
    /// For each record of `consumed`: the BIO's byte count once it was appended, and the
    /// caller's bytes up to its end. A record whose bytes all left counts back its bytes, so a
    /// slow socket shows progress record by record, not batch by batch (a minimum speed is
    /// measured on it).
    struct { unsigned long long wire_end; size_t plain_end; } marks[BS_TLS_MARKS];
    int mark_count;
    /// A read's failure that followed bytes already decrypted in the same call: the next call
    /// returns it (clearing it from OpenSSL's queue then would lose the reason).
    long deferred;
    char deferred_error[256];
};

static void set_error(char *error, size_t size, const char *prefix) {
    if (!error || size == 0) return;
    unsigned long code = ERR_peek_last_error();
    char detail[256] = "";
    if (code) ERR_error_string_n(code, detail, sizeof detail);
    if (detail[0]) snprintf(error, size, "%s: %s", prefix, detail);
    else snprintf(error, size, "%s", prefix);
    ERR_clear_error();
}

// OpenSSL's own suites and ciphers, AES-128-GCM first, as browsers and Go order them: 128-bit
// security, and four fewer AES rounds per block than AES-256 for both ends (README, "HTTPS").
// The TLS 1.2 list is OpenSSL's DEFAULT ("ALL:!COMPLEMENTOFDEFAULT:!eNULL"), reordered only.
#define BS_TLS13_CIPHERSUITES "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"
#define BS_TLS12_CIPHERS "ECDHE+AESGCM+AES128:ALL:!COMPLEMENTOFDEFAULT:!eNULL"

bs_tls_context *bs_tls_context_create(const char *ca_file, char *error, size_t error_size) {
    ERR_clear_error();
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) {
        set_error(error, error_size, "cannot create a TLS context");
        return NULL;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (SSL_CTX_set_ciphersuites(ctx, BS_TLS13_CIPHERSUITES) != 1 || SSL_CTX_set_cipher_list(ctx, BS_TLS12_CIPHERS) != 1) {
        set_error(error, error_size, "cannot set the cipher preference");
        SSL_CTX_free(ctx);
        return NULL;
    }
    static const unsigned char alpn[] = { 8, 'h', 't', 't', 'p', '/', '1', '.', '1' };
    int trusted = ca_file ? SSL_CTX_load_verify_locations(ctx, ca_file, NULL) : SSL_CTX_set_default_verify_paths(ctx);
    if (SSL_CTX_set_alpn_protos(ctx, alpn, sizeof alpn) != 0 || trusted != 1) {
        char prefix[512];
        snprintf(prefix, sizeof prefix, ca_file ? "cannot load the CA certificates of %s" : "cannot load the system's CA certificates%s",
                 ca_file ? ca_file : "");
        set_error(error, error_size, prefix);
        SSL_CTX_free(ctx);
        return NULL;
    }
    bs_tls_context *context = malloc(sizeof *context);
    if (!context) {
        SSL_CTX_free(ctx);
        snprintf(error, error_size, "out of memory");
        return NULL;
    }
    context->ctx = ctx;
    return context;
}

void bs_tls_context_free(bs_tls_context *context) {
    if (!context) return;
    SSL_CTX_free(context->ctx);
    free(context);
}

static int is_ip_address(const char *host) {
    unsigned char address[16];
    return inet_pton(AF_INET, host, address) == 1 || inet_pton(AF_INET6, host, address) == 1;
}

bs_tls *bs_tls_create(bs_tls_context *context, int fd, const char *host, char *error, size_t error_size) {
    ERR_clear_error();
    BIO_METHOD *bio_method = bs_socket_bio_method();
    SSL *ssl = bio_method ? SSL_new(context->ctx) : NULL;
    BIO *bio = ssl ? BIO_new(bio_method) : NULL;
    bs_bio_state *state = bio ? calloc(1, sizeof *state) : NULL;
    if (!state) {
        set_error(error, error_size, "cannot create a TLS session");
        BIO_free(bio);
        SSL_free(ssl);
        return NULL;
    }
    state->fd = fd;
    BIO_set_data(bio, state);
    SSL_set_bio(ssl, bio, bio);
    int named;
    if (is_ip_address(host)) {
        // RFC 6066: no SNI for an address; the certificate must name the address itself.
        named = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host);
    } else {
        // A fully qualified name ends in a dot; SNI carries it without (RFC 6066 §3) and
        // certificates name it without, so the dot is dropped for both, as curl does.
        char name[256];
        size_t length = strlen(host);
        if (length > 1 && host[length - 1] == '.') length -= 1;
        if (length >= sizeof name) {
            set_error(error, error_size, "the host name is longer than 255 bytes");
            SSL_free(ssl);
            return NULL;
        }
        memcpy(name, host, length);
        name[length] = '\0';
        SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        named = SSL_set_tlsext_host_name(ssl, name) == 1 && SSL_set1_host(ssl, name) == 1;
    }
    if (named != 1) {
        set_error(error, error_size, "cannot set the host name to verify");
        SSL_free(ssl);
        return NULL;
    }
    bs_tls *session = malloc(sizeof *session);
    if (!session) {
        SSL_free(ssl);
        snprintf(error, error_size, "out of memory");
        return NULL;
    }
    session->ssl = ssl;
    session->consumed = 0;
    session->reported = 0;
    session->mark_count = 0;
    session->deferred = 0;
    session->deferred_error[0] = 0;
    return session;
}

void bs_tls_free(bs_tls *session) {
    if (!session) return;
    SSL_free(session->ssl);
    free(session);
}

// Whether `code` is a fatal alert the peer sent to refuse this client (its certificate, its
// credentials, its protocol): asking again would be refused again.
static int is_refusal(unsigned long code) {
    if (ERR_GET_LIB(code) != ERR_LIB_SSL) return 0;
    int reason = ERR_GET_REASON(code) - SSL_AD_REASON_OFFSET;
    switch (reason) {
    case SSL_AD_HANDSHAKE_FAILURE: case SSL_AD_BAD_CERTIFICATE: case SSL_AD_UNSUPPORTED_CERTIFICATE:
    case SSL_AD_CERTIFICATE_REVOKED: case SSL_AD_CERTIFICATE_EXPIRED: case SSL_AD_CERTIFICATE_UNKNOWN:
    case SSL_AD_UNKNOWN_CA: case SSL_AD_ACCESS_DENIED: case SSL_AD_PROTOCOL_VERSION:
    case SSL_AD_INSUFFICIENT_SECURITY: case SSL_AD_CERTIFICATE_REQUIRED: case SSL_AD_NO_APPLICATION_PROTOCOL:
        return 1;
    default:
        return 0;
    }
}

// Maps a failed SSL_* call to a BS_TLS_* code, with the reason in `error`.
static long failure(bs_tls *session, int result, const char *operation, char *error, size_t error_size) {
    int code = SSL_get_error(session->ssl, result);
    switch (code) {
    case SSL_ERROR_WANT_READ: return BS_TLS_WANT_READ;
    case SSL_ERROR_WANT_WRITE: return BS_TLS_WANT_WRITE;
    case SSL_ERROR_ZERO_RETURN: return BS_TLS_CLOSED;
    default: break;
    }
    long verify = SSL_get_verify_result(session->ssl);
    if (verify != X509_V_OK) {
        const char *name = SSL_get_servername(session->ssl, TLSEXT_NAMETYPE_host_name);
        if (verify == X509_V_ERR_HOSTNAME_MISMATCH && name) {
            snprintf(error, error_size, "the server's certificate was refused: %s: it is not for %s",
                     X509_verify_cert_error_string(verify), name);
        } else {
            snprintf(error, error_size, "the server's certificate was refused: %s", X509_verify_cert_error_string(verify));
        }
        ERR_clear_error();
        return BS_TLS_ERROR;
    }
    unsigned long last = ERR_peek_last_error();
    if (code == SSL_ERROR_SSL && ERR_GET_REASON(last) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
        ERR_clear_error();
        return BS_TLS_TRUNCATED;
    }
    if (code == SSL_ERROR_SYSCALL && last == 0) {
        // The caller zeroed errno before the call: still 0, the socket only ended (an EOF
        // without close_notify); else the socket failed (a reset, a broken pipe), which says so.
        int saved = errno;
        if (saved == 0) return BS_TLS_TRUNCATED;
        char prefix[256];
        snprintf(prefix, sizeof prefix, "%s: %s", operation, strerror(saved));
        set_error(error, error_size, prefix);
        return BS_TLS_ERROR;
    }
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s failed", operation);
    int refused = is_refusal(last);
    set_error(error, error_size, prefix);
    return refused ? BS_TLS_REFUSED : BS_TLS_ERROR;
}

int bs_tls_handshake(bs_tls *session, char *error, size_t error_size) {
    ERR_clear_error();
    errno = 0;
    int result = SSL_connect(session->ssl);
    if (result == 1) return BS_TLS_OK;
    int ssl_error = SSL_get_error(session->ssl, result);
    long code = failure(session, result, "the TLS handshake", error, error_size);
    // An end of the connection in the middle of a handshake is never a clean end; like a reset
    // (a system call's error), it is the connection that broke, not a refusal by the peer.
    if (code == BS_TLS_CLOSED || code == BS_TLS_TRUNCATED) {
        snprintf(error, error_size, "the server closed the connection during the TLS handshake");
        return BS_TLS_LOST;
    }
    if (code == BS_TLS_ERROR && ssl_error == SSL_ERROR_SYSCALL) return BS_TLS_LOST;
    return (int)code;
}

// Keeps a failure that follows bytes already returned (or a look) for the next bs_tls_read;
// waiting for more is no failure.
static void defer_failure(bs_tls *session, int result) {
    int code = SSL_get_error(session->ssl, result);
    if (code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE) {
        ERR_clear_error();
        return;
    }
    if (session->deferred) return;
    session->deferred_error[0] = 0;
    session->deferred = failure(session, result, "TLS read", session->deferred_error, sizeof session->deferred_error);
}

long bs_tls_read(bs_tls *session, void *buffer, size_t length, char *error, size_t error_size) {
    if (session->deferred) {
        long deferred = session->deferred;
        session->deferred = 0;
        if (error && error_size) snprintf(error, error_size, "%s", session->deferred_error);
        return deferred;
    }
    ERR_clear_error();
    errno = 0;
    size_t count = 0;
    int result = SSL_read_ex(session->ssl, buffer, length, &count);
    if (result != 1) return failure(session, result, "TLS read", error, error_size);
    // One call decrypts one record (16 KiB at most): go on while more is already here, so a
    // reader gets what a plain recv would give, not a thread wake-up per record.
    size_t total = count;
    while (total < length) {
        ERR_clear_error();
        errno = 0;
        size_t more = 0;
        result = SSL_read_ex(session->ssl, (char *)buffer + total, length - total, &more);
        if (result != 1) {
            // No more yet, or the end or a failure (a bad record, an alert, a reset), which
            // the next call returns with its reason.
            defer_failure(session, result);
            break;
        }
        total += more;
    }
    return (long)total;
}

// The send of held records failed; errno says why.
static long send_failure(char *error, size_t error_size) {
    snprintf(error, error_size, "TLS write: %s", strerror(errno));
    return BS_TLS_ERROR;
}

long bs_tls_write(bs_tls *session, const void *buffer, size_t length, char *error, size_t error_size) {
    ERR_clear_error();
    errno = 0;
    BIO *bio = SSL_get_wbio(session->ssl);
    bs_bio_state *state = BIO_get_data(bio);
    if (session->consumed != 0 && session->reported == session->consumed) {
        // Every byte was counted back, but the BIO holds more (an alert a read wrote after
        // the last record): it leaves before new records, which start afresh.
        int sent = bs_bio_send_held(bio, state);
        if (sent < 0) return send_failure(error, error_size);
        if (sent == 0) return BS_TLS_WANT_WRITE;
        session->consumed = 0;
    }
    if (session->consumed == 0) {
        // Record after record (partial writes: one per call) into the BIO, which sends when full.
        size_t total = 0;
        session->reported = 0;
        session->mark_count = 0;
        while (total < length && session->mark_count < BS_TLS_MARKS) {
            size_t count = 0;
            int result = SSL_write_ex(session->ssl, (const char *)buffer + total, length - total, &count);
            if (result == 1) {
                total += count;
                session->marks[session->mark_count].wire_end = state->appended;
                session->marks[session->mark_count].plain_end = total;
                session->mark_count++;
                continue;
            }
            int code = SSL_get_error(session->ssl, result);
            // The socket is full: what was encrypted so far leaves first; OpenSSL keeps the
            // record it could not hand over for the caller's next call, which starts after it.
            if (total > 0 && (code == SSL_ERROR_WANT_WRITE || code == SSL_ERROR_WANT_READ)) {
                ERR_clear_error();
                break;
            }
            long failed = failure(session, result, "TLS write", error, error_size);
            if (failed == BS_TLS_CLOSED || failed == BS_TLS_TRUNCATED) {
                snprintf(error, error_size, "the server ended the TLS session while a request was being sent");
                return BS_TLS_ERROR;
            }
            return failed;
        }
        session->consumed = total;
    }
    int sent = bs_bio_send_held(bio, state);
    if (sent < 0) return send_failure(error, error_size);
    if (sent == 0) {
        // The socket is full: count back the records that left whole.
        size_t left = session->reported;
        for (int i = 0; i < session->mark_count && session->marks[i].wire_end <= state->sent; i++) left = session->marks[i].plain_end;
        if (left == session->reported) return BS_TLS_WANT_WRITE;
        long progress = (long)(left - session->reported);
        session->reported = left;
        return progress;
    }
    long done = (long)(session->consumed - session->reported);
    session->consumed = 0;
    session->reported = 0;
    session->mark_count = 0;
    return done;
}

unsigned long long bs_tls_received(bs_tls *session) {
    bs_bio_state *state = BIO_get_data(SSL_get_rbio(session->ssl));
    return state ? state->received : 0;
}

int bs_tls_has_input(bs_tls *session) {
    if (session->deferred || SSL_pending(session->ssl) > 0) return 1;
    ERR_clear_error();
    errno = 0;
    unsigned char byte;
    size_t count = 0;
    int result = SSL_peek_ex(session->ssl, &byte, 1, &count);
    if (result == 1) return 1;
    // An end or a failure is input too: the next read returns it, with its reason.
    defer_failure(session, result);
    return session->deferred ? 1 : 0;
}

#endif
