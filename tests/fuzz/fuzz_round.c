/* fuzz_round.c - a round's record (gagg/<t>/round) as a member reads a
 * peer's: lib/kv.c's reader and writer, lib/quorum.c, lib/xrec.c */
#include "fuzz.h"
#include "kv.h"
#include "quorum.h"
#include "xrec.h"

/*
 * An input is the record's text.  Beyond "no crash":
 *
 *  - kv.h: a text the reader takes whole is the text the writer makes
 *    of the names and values read, byte for byte; a refusal is
 *    SPIRT_EDATA or SPIRT_EVERSION;
 *  - quorum.c takes only what kv.h takes; each id it gives is the id of
 *    a "peer=<id> self" or "peer=<id> used" line, in the record's order;
 *    xms is -1 or in [0, 1e12];
 *  - xrec.c's state= line: taken exactly when kv.h takes the text (and
 *    its names are under 32 bytes); its answer is the record's lines
 *    without state=, then state=lock, then END; given again, the same
 *    bytes; quorum.c reads from it what it read from the record.
 */

#define MAXIDS 8

/* the record read through: 0 and its lines rewritten into *w (grown), or
 * the reader's code; *longname: a name of 32 bytes or more */
static int
rewrite(const uint8_t *d, size_t n, struct spirt_kvw *w, int *longname)
{
	static const char *const multi[] = { "peer", NULL };
	struct spirt_kvr r;
	char *name, *val;
	int rc;

	*longname = 0;
	w->buf = NULL;
	if ((rc = spirt_kvr_open(&r, d, n, "spirt-round", multi, 0)))
		return rc;
	if ((name = malloc(n + 1)) == NULL || (val = malloc(n + 1)) == NULL)
		abort();
	spirt_kvw_init(w, NULL, 0, "spirt-round");
	while ((rc = spirt_kvr_next(&r)) == 0) {
		FUZZ_ASSERT(r.nlen > 0 && r.nlen < n && r.vlen < n);
		*longname |= r.nlen >= 32;
		memcpy(name, r.name, r.nlen);
		name[r.nlen] = '\0';
		memcpy(val, r.val, r.vlen);
		val[r.vlen] = '\0';
		FUZZ_ASSERT(strlen(val) == r.vlen);     /* no NUL in a value */
		spirt_kvw_put(w, name, val);
	}
	free(name);
	free(val);
	if (rc != SPIRT_EOF) {
		free(w->buf);
		w->buf = NULL;
	}
	return rc == SPIRT_EOF ? 0 : rc;
}

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	char ids[MAXIDS][SPIRT_QUORUM_ID], ids2[MAXIDS][SPIRT_QUORUM_ID];
	char *out = NULL, *again = NULL;
	size_t nids = 0, nids2 = 0, on = 0, an = 0, wn;
	double xms, xms2;
	struct spirt_kvw w;
	int kv, q, st, longname;

	kv = rewrite(d, n, &w, &longname);
	FUZZ_ASSERT(kv == 0 || kv == SPIRT_EDATA || kv == SPIRT_EVERSION);
	if (kv == 0) {
		FUZZ_ASSERT(spirt_kvw_end(&w, &wn) == 0);
		FUZZ_ASSERT(wn == n && memcmp(w.buf, d, n) == 0);
		free(w.buf);
	}

	q = spirt_quorum_round_parse(ids, MAXIDS, &nids, &xms,
	    (const char *)d, n);
	FUZZ_ASSERT(q == 0 || q == SPIRT_EDATA);
	FUZZ_ASSERT(q != 0 || kv == 0);
	if (q == 0) {
		FUZZ_ASSERT(nids <= MAXIDS);
		FUZZ_ASSERT(xms == -1 || (xms >= 0 && xms <= 1e12));
		for (size_t i = 0; i < nids; i++) {
			size_t l = strlen(ids[i]);
			char line[SPIRT_QUORUM_ID + 16];
			int self, used;

			FUZZ_ASSERT(l > 0 && l < SPIRT_QUORUM_ID);
			snprintf(line, sizeof line, "\npeer=%s self\n", ids[i]);
			self = memmem(d, n, line, strlen(line)) != NULL;
			snprintf(line, sizeof line, "\npeer=%s used\n", ids[i]);
			used = memmem(d, n, line, strlen(line)) != NULL;
			FUZZ_ASSERT(self || used);
		}
	}

	st = spirt_xrec_with_state(&out, &on, d, n, "lock");
	FUZZ_ASSERT(st == 0 || st == SPIRT_EDATA || st == SPIRT_EVERSION);
	FUZZ_ASSERT((st == 0) == (kv == 0 && !longname));
	if (st)
		return 0;
	FUZZ_ASSERT(on >= 15 && memcmp(out + on - 15, "state=lock\nEND\n",
	    15) == 0);
	FUZZ_ASSERT(memmem(out, on - 15, "\nstate=", 7) == NULL);
	FUZZ_ASSERT(spirt_xrec_with_state(&again, &an, out, on, "lock") == 0);
	FUZZ_ASSERT(an == on && memcmp(again, out, on) == 0);
	if (q == 0) {
		FUZZ_ASSERT(spirt_quorum_round_parse(ids2, MAXIDS, &nids2,
		    &xms2, out, on) == 0);
		FUZZ_ASSERT(nids == nids2 && xms == xms2);
		for (size_t i = 0; i < nids; i++)
			FUZZ_ASSERT(strcmp(ids[i], ids2[i]) == 0);
	}
	free(again);
	free(out);
	return 0;
}
