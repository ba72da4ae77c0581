/* test_supervise.c - the supervisor: start, send, answers, ends, deadlines */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "supervise.h"
#include "tool.h"

/* the next event that is not the end of input (an empty pipe's) */
static int
next(struct spirt_sup *s, struct spirt_sup_event *ev)
{
	int rc;

	do
		rc = spirt_sup_next(s, ev);
	while (rc == 0 && ev->kind == SPIRT_SUP_EOF);
	return rc;
}

int
main(void)
{
	char *cat[] = { "cat", NULL };
	char *three[] = { "sh", "-c", "read x; echo got $x; exit 3", NULL };
	char *hang[] = { "sleep", "30", NULL };
	char *selfkill[] = { "sh", "-c", "kill -9 $$", NULL };
	char *none[] = { "/nonexistent/spirt-none", NULL };
	struct spirt_sup_event ev;
	struct spirt_sup *s;
	uint64_t t0;
	int p[2], sfd;

	CHECK(pipe(p) == 0);
	close(p[1]);
	CHECK_RC(sigpipe_open(&sfd));
	CHECK_RC(spirt_sup_open(&s, p[0], sfd));

	/* a request, its answer, in order */
	CHECK_RC(spirt_sup_start(s, "c", cat, 0));
	CHECK(spirt_sup_start(s, "c", cat, 0) == EEXIST);
	CHECK_RC(spirt_sup_send(s, "c", "one", 5000));
	CHECK_RC(spirt_sup_send(s, "c", "two words", 0));
	CHECK_RC(next(s, &ev));
	CHECK(ev.kind == SPIRT_SUP_ANSWER && strcmp(ev.name, "c") == 0 &&
	    strcmp(ev.line, "one") == 0);
	CHECK_RC(next(s, &ev));
	CHECK(ev.kind == SPIRT_SUP_ANSWER && strcmp(ev.line, "two words") == 0);
	CHECK(spirt_sup_send(s, "nobody", "x", 0) == ESRCH);

	/* an end: what it wrote first, then its status */
	CHECK_RC(spirt_sup_start(s, "t", three, 0));
	CHECK_RC(spirt_sup_send(s, "t", "x", 5000));
	CHECK_RC(next(s, &ev));
	CHECK(ev.kind == SPIRT_SUP_ANSWER && strcmp(ev.line, "got x") == 0);
	CHECK_RC(next(s, &ev));
	CHECK(ev.kind == SPIRT_SUP_DIED && strcmp(ev.name, "t") == 0 &&
	    ev.status == 3 && ev.pid > 0 && !ev.guarded);
	/* started again once ended */
	CHECK_RC(spirt_sup_start(s, "k", selfkill, 0));
	CHECK_RC(next(s, &ev));
	CHECK(ev.kind == SPIRT_SUP_DIED && strcmp(ev.name, "k") == 0 &&
	    ev.status == -SIGKILL);

	/* a request past its deadline: killed, late, within a bound */
	CHECK_RC(spirt_sup_start(s, "h", hang, 0));
	t0 = spirt_sup_now();
	CHECK_RC(spirt_sup_send(s, "h", "x", 200));
	CHECK_RC(next(s, &ev));
	CHECK(ev.kind == SPIRT_SUP_LATE && strcmp(ev.name, "h") == 0);
	CHECK(spirt_sup_now() - t0 >= 200 && spirt_sup_now() - t0 < 5000);
	/* a life past its deadline likewise */
	CHECK_RC(spirt_sup_start(s, "h", hang, 150));
	CHECK_RC(next(s, &ev));
	CHECK(ev.kind == SPIRT_SUP_LATE && strcmp(ev.name, "h") == 0);

	/* kill: at once, its end no event, its name free again */
	CHECK_RC(spirt_sup_start(s, "h", hang, 0));
	CHECK_RC(spirt_sup_kill(s, "h"));
	CHECK(spirt_sup_kill(s, "h") == ESRCH);
	CHECK(spirt_sup_guard(s, "h") == ESRCH);
	CHECK_RC(spirt_sup_start(s, "h", three, 0));
	CHECK_RC(spirt_sup_send(s, "h", "y", 5000));
	CHECK_RC(next(s, &ev));
	CHECK(ev.kind == SPIRT_SUP_ANSWER && strcmp(ev.line, "got y") == 0);
	CHECK_RC(next(s, &ev));
	CHECK(ev.kind == SPIRT_SUP_DIED && strcmp(ev.name, "h") == 0 &&
	    ev.status == 3);
	/* guard: a guarded child's end says so */
	CHECK_RC(spirt_sup_start(s, "k", selfkill, 0));
	CHECK_RC(spirt_sup_guard(s, "k"));
	CHECK_RC(next(s, &ev));
	CHECK(ev.kind == SPIRT_SUP_DIED && strcmp(ev.name, "k") == 0 &&
	    ev.guarded);

	/* stop: SIGTERM, its end told, no longer guarded */
	CHECK_RC(spirt_sup_start(s, "k", hang, 0));
	CHECK_RC(spirt_sup_guard(s, "k"));
	CHECK_RC(spirt_sup_term(s, "k"));
	CHECK_RC(next(s, &ev));
	CHECK(ev.kind == SPIRT_SUP_DIED && strcmp(ev.name, "k") == 0 &&
	    ev.status == -SIGTERM && !ev.guarded);
	CHECK(spirt_sup_term(s, "k") == ESRCH);

	/* no such command: refused, nothing left */
	CHECK(spirt_sup_start(s, "n", none, 0) == ENOENT);
	CHECK(spirt_sup_send(s, "n", "x", 0) == ESRCH);

	spirt_sup_stop(s, 1000);
	CHECK(spirt_sup_send(s, "c", "x", 0) == ESRCH);
	spirt_sup_close(s);
	close(p[0]);
	return check_failed;
}
