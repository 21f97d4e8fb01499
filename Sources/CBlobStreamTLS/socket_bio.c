#include "CBlobStreamTLS.h"

#if BS_TLS_AVAILABLE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <openssl/ssl.h>
#include "socket_bio.h"

#define BS_TLS_SEND_BUFFER (128 * 1024)

int bs_bio_send_held(BIO *bio, bs_bio_state *state) {
    while (state->start < state->end) {
        errno = 0;
        ssize_t sent = send(state->fd, state->bytes + state->start, state->end - state->start, MSG_NOSIGNAL);
        if (sent < 0 && errno == EINTR) continue;
        if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            BIO_set_retry_write(bio);
            return 0;
        }
        if (sent < 0) return -1;
        state->start += (size_t)sent;
        state->sent += (unsigned long long)sent;
    }
    state->start = state->end = 0;
    return 1;
}

static int bio_write(BIO *bio, const char *data, int length) {
    bs_bio_state *state = BIO_get_data(bio);
    BIO_clear_retry_flags(bio);
    if (length <= 0) return 0;
    if (!state->bytes && !(state->bytes = malloc(BS_TLS_SEND_BUFFER))) {
        errno = ENOMEM;
        return -1;
    }
    if (BS_TLS_SEND_BUFFER - state->end < (size_t)length) {
        int held = bs_bio_send_held(bio, state);
        if (held <= 0) return -1;
    }
    // A record is at most 16 KiB and some bytes, far less than the buffer.
    size_t taken = (size_t)length < BS_TLS_SEND_BUFFER ? (size_t)length : BS_TLS_SEND_BUFFER;
    memcpy(state->bytes + state->end, data, taken);
    state->end += taken;
    state->appended += taken;
    return (int)taken;
}

static int bio_read(BIO *bio, char *data, int length) {
    bs_bio_state *state = BIO_get_data(bio);
    BIO_clear_retry_flags(bio);
    ssize_t received;
    // errno stays 0 at the socket's end: failure() tells that end (a truncation) from a
    // socket error by it, whatever OpenSSL's own calls (a certificate lookup) left there.
    do {
        errno = 0;
        received = recv(state->fd, data, (size_t)length, 0);
    } while (received < 0 && errno == EINTR);
    if (received < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) BIO_set_retry_read(bio);
    if (received > 0) state->received += (unsigned long long)received;
    return (int)received;
}

static long bio_ctrl(BIO *bio, int command, long number, void *pointer) {
    (void)number; (void)pointer;
    bs_bio_state *state = BIO_get_data(bio);
    switch (command) {
    case BIO_CTRL_FLUSH:
        BIO_clear_retry_flags(bio);
        return bs_bio_send_held(bio, state) > 0 ? 1 : 0;
    case BIO_CTRL_WPENDING: return (long)(state->end - state->start);
    case BIO_CTRL_PENDING: return 0;
    default: return 0;
    }
}

static int bio_destroy(BIO *bio) {
    bs_bio_state *state = BIO_get_data(bio);
    if (state) {
        free(state->bytes);
        free(state);
    }
    BIO_set_data(bio, NULL);
    return 1;
}

static int bio_create(BIO *bio) {
    BIO_set_init(bio, 1);
    return 1;
}

static BIO_METHOD *method;

static void make_method(void) {
    BIO_METHOD *made = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "blobstream socket");
    if (!made) return;
    BIO_meth_set_write(made, bio_write);
    BIO_meth_set_read(made, bio_read);
    BIO_meth_set_ctrl(made, bio_ctrl);
    BIO_meth_set_create(made, bio_create);
    BIO_meth_set_destroy(made, bio_destroy);
    method = made;
}

BIO_METHOD *bs_socket_bio_method(void) {
    static CRYPTO_ONCE once = CRYPTO_ONCE_STATIC_INIT;
    CRYPTO_THREAD_run_once(&once, make_method);
    return method;
}

#endif
