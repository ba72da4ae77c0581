/* session.h - sealed and streamed messages, the replay window (ISC licence) */
#ifndef SPIRT_SESSION_H
#define SPIRT_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "token.h"

/*
 * What a handshake (handshake.h) leaves: a session's keys and counters,
 * and the messages sealed and opened with them (docs/protocol.md,
 * "Sealed messages", "Streamed messages", "Replay rules").
 */

#define SPIRT_MSG_HEAD 128              /* message header before the key */
#define SPIRT_MSG_TAG 16                /* Poly1305 tag */
#define SPIRT_MSG_KEY_MAX 511           /* = SPIRT_KEY_MAX (store.h) */
/* counters more than this far behind the newest are refused as replays */
#define SPIRT_REPLAY_WINDOW 1984

/* Keys and counters of one established session. */
struct spirt_session;


/* ---- messages ---- */

/*
 * Size of a sealed message carrying n bytes under store key: header, key,
 * ciphertext, tag.  0 if key is invalid or the size overflows.
 */
size_t spirt_msg_size(const char *key, size_t n) SPIRT_NONNULL(1);

/* A message's clear header, for routing before it is opened. */
struct spirt_msg_info {
	uint64_t counter;
	uint64_t step;
	char run[SPIRT_ID_MAX + 1];
	char sender[SPIRT_ID_MAX + 1];
	char receiver[SPIRT_ID_MAX + 1];
	char key[SPIRT_MSG_KEY_MAX + 1];
	size_t n;                       /* plaintext bytes */
};
/* Parse (not authenticate) a message's header: ETRUNC, EMAGIC, ... */
SPIRT_MUST_CHECK int spirt_msg_info(struct spirt_msg_info *info,
    const unsigned char *msg, size_t len) SPIRT_NONNULL(1, 2);

/*
 * Seal n bytes of pt for the peer of s, bound to step and store key, into
 * out (cap >= spirt_msg_size(key, n)).  pt may be out + SPIRT_MSG_HEAD +
 * strlen(key) (in place).  EOVERFLOW when the counter is exhausted.
 */
SPIRT_MUST_CHECK int spirt_session_seal(struct spirt_session *s,
    unsigned char *out, size_t cap, size_t *len, uint64_t step,
    const char *key, const void *pt, size_t n)
    SPIRT_NONNULL(1, 2, 4, 6);
/*
 * Open a message from the peer of s that must be for step and store key.
 * The clear header is compared first (SPIRT_ERUN, SPIRT_EADDR, SPIRT_ESTEP,
 * SPIRT_EWRONGKEY), then the counter (SPIRT_EREPLAY), then the tag
 * (SPIRT_EMAC); the counter is marked seen only once the tag is good.  pt
 * (cap >= the plaintext) may be msg + SPIRT_MSG_HEAD + strlen(key).
 */
SPIRT_MUST_CHECK int spirt_session_open(struct spirt_session *s, void *pt,
    size_t cap, size_t *n, uint64_t step, const char *key,
    const unsigned char *msg, size_t len) SPIRT_NONNULL(1, 4, 6, 7);
/*
 * Streamed messages (docs/protocol.md, "Streamed messages"): the header
 * of a sealed message with type 2, then the payload in frames of
 * SPIRT_FRAME_BYTES (the last one shorter), each sealed on its own with
 * its number and a last-frame flag in its associated data, so that a
 * receiver opens each frame as it arrives, and a frame moved, dropped,
 * repeated or cut off is refused.  A stream takes one counter of the
 * session, as a message does.  The state holds no secret: the keys stay
 * in the session, which must outlive it.
 */
#define SPIRT_FRAME_BYTES 65536
#define SPIRT_MSG_SINGLE 1              /* a message's type */
#define SPIRT_MSG_STREAM 2

struct spirt_stream {
	struct spirt_session *s;
	unsigned char ad[SPIRT_MSG_HEAD + SPIRT_MSG_KEY_MAX + 9];
	size_t hlen;                    /* header and key */
	uint64_t counter, n, frames, next;
	int open;                       /* 1: opening, 0: sealing */
};

/* Frames of a stream of n bytes: ceil(n / SPIRT_FRAME_BYTES), 1 if n=0. */
uint64_t spirt_stream_frames(uint64_t n);
/* Wire size of a stream of n bytes under key; 0 if invalid or too big. */
size_t spirt_stream_size(const char *key, size_t n) SPIRT_NONNULL(1);
/* Plaintext bytes of the next frame; 0 once every frame is done. */
size_t spirt_stream_frame_len(const struct spirt_stream *w)
    SPIRT_NONNULL(1);

/*
 * What the first bytes of a message say, before it is opened: from its
 * first SPIRT_MSG_HEAD bytes, the type (SPIRT_MSG_SINGLE or _STREAM), the
 * length of its header and key, and its whole length.  SPIRT_ETRUNC (fewer
 * bytes), SPIRT_EMAGIC, SPIRT_EVERSION, SPIRT_EDATA.
 */
SPIRT_MUST_CHECK int spirt_msg_peek(const unsigned char *m, size_t len,
    int *type, size_t *hlen, uint64_t *total) SPIRT_NONNULL(1, 3, 4, 5);

/*
 * Seal a stream of n bytes for step and store key: the header and key
 * into head (cap >= SPIRT_MSG_HEAD + strlen(key)), *hlen its length;
 * then each frame in turn with spirt_stream_seal_frame, len being
 * spirt_stream_frame_len(w): out gets len + SPIRT_MSG_TAG bytes (pt may be
 * out).  EOVERFLOW when the session's counter is exhausted.
 */
SPIRT_MUST_CHECK int spirt_stream_seal_begin(struct spirt_stream *w,
    struct spirt_session *s, unsigned char *head, size_t cap, size_t *hlen,
    uint64_t step, const char *key, size_t n) SPIRT_NONNULL(1, 2, 3, 5, 7);
SPIRT_MUST_CHECK int spirt_stream_seal_frame(struct spirt_stream *w,
    unsigned char *out, const void *pt, size_t len) SPIRT_NONNULL(1, 2);

/*
 * Open a stream from the peer of s that must be for step and store key.
 * begin checks its header and key (hlen bytes, as spirt_msg_peek says),
 * as spirt_session_open does before it decrypts (format, SPIRT_ERUN,
 * SPIRT_EADDR, SPIRT_ESTEP, SPIRT_EWRONGKEY, the counter: SPIRT_EREPLAY),
 * and gives the payload length; each frame then opens in turn (in:
 * spirt_stream_frame_len(r) + SPIRT_MSG_TAG bytes, pt may be in): SPIRT_EMAC
 * for a changed, moved or foreign frame.  end, after the last frame,
 * marks the counter seen (SPIRT_ETRUNC if frames are missing).  Nothing
 * of a stream may be used before end returns 0.
 */
SPIRT_MUST_CHECK int spirt_stream_open_begin(struct spirt_stream *r,
    struct spirt_session *s, const unsigned char *head, size_t hlen,
    uint64_t step, const char *key, size_t *n) SPIRT_NONNULL(1, 2, 3, 6, 7);
SPIRT_MUST_CHECK int spirt_stream_open_frame(struct spirt_stream *r,
    void *pt, const unsigned char *in, size_t inlen) SPIRT_NONNULL(1, 2, 3);
SPIRT_MUST_CHECK int spirt_stream_open_end(struct spirt_stream *r)
    SPIRT_NONNULL(1);

/*
 * A whole stream in one buffer, for small values and tests: seal n bytes
 * of pt into out (cap >= spirt_stream_size(key, n)); open msg (len bytes:
 * exactly a stream's, else SPIRT_ETRUNC or SPIRT_EDATA) into pt (cap >=
 * the payload), with the checks above.
 */
SPIRT_MUST_CHECK int spirt_stream_seal(struct spirt_session *s,
    unsigned char *out, size_t cap, size_t *len, uint64_t step,
    const char *key, const void *pt, size_t n) SPIRT_NONNULL(1, 2, 4, 6);
SPIRT_MUST_CHECK int spirt_stream_open(struct spirt_session *s, void *pt,
    size_t cap, size_t *n, uint64_t step, const char *key,
    const unsigned char *msg, size_t len) SPIRT_NONNULL(1, 4, 6, 7);

/* The peer this session is with, as its token or the allowlist says. */
const struct spirt_member *spirt_session_peer(const struct spirt_session *s)
    SPIRT_NONNULL(1);
/* 1 once the peer has proved it holds the keys (a message opened). */
int spirt_session_confirmed(const struct spirt_session *s) SPIRT_NONNULL(1);
/* Zero and free; NULL is fine. */
void spirt_session_free(struct spirt_session *s);

/* ---- lib-internal: for the other modules of crypto.h ---- */

/*
 * A session with send key tx and receive key rx (guarded memory, copied),
 * between self and peer of run, the peer as m vouches; confirmed from the
 * start on the initiator's side (the answer's signature proved the
 * responder).  0, or ENOMEM.  Free with spirt_session_free().
 */
SPIRT_MUST_CHECK int spirt_session_new(struct spirt_session **s,
    int initiator, const unsigned char tx[32], const unsigned char rx[32],
    const char *run, const char *self, const char *peer,
    const struct spirt_member *m) SPIRT_NONNULL(1, 3, 4, 5, 6, 7, 8);

#endif
