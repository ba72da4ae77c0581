#!/bin/sh
# bench/fuzz.sh - the long fuzzing run: every harness of tests/fuzz/ for
# FUZZ_SECONDS each (default 120; the figures in docs/fuzzing.md are from
# 60), one after another, and a table of what each did: runs, runs per
# second, coverage (libFuzzer's edge count), the corpus it grew to, and
# its result.  A crash, hang, leak or sanitizer report fails the bench
# and leaves the input and the log (tests/fuzz/run.sh prints where).
#   sh bench/fuzz.sh                    (make bench runs it)
#   FUZZ_SECONDS=600 FUZZ_KEEP=dir sh bench/fuzz.sh [target ...]
# The machine's load is in the header: runs per second are read against
# it (each target runs alone, on one core).
cd "$(dirname "$0")/.." || exit 70
. bench/cpu.sh
secs=${FUZZ_SECONDS:-120}
if ! command -v clang >/dev/null; then
	echo "bench/fuzz: clang is missing: sh ./bootstrap fuzz" >&2
	exit 69
fi
make -s fuzz || exit 70
bench_header bench/fuzz
echo "bench/fuzz: $secs s per target, one at a time"
log=$(mktemp) || exit 71
trap 'rm -f "$log"' EXIT
sh tests/fuzz/run.sh -t "$secs" ${FUZZ_KEEP:+-o "$FUZZ_KEEP"} "$@" >"$log" 2>&1
rc=$?
grep -v '^fuzz: target=' "$log" | grep -v '^ok - ' | grep -v 'passed, ' |
    sed 's/^/bench\/fuzz: /'
awk '
/^fuzz: target=/ {
	for (i = 2; i <= NF; i++) {
		split($i, kv, "=")
		v[kv[1]] = kv[2]
	}
	if (!n++)
		printf "%-10s %6s %12s %9s %6s %7s %8s  %s\n", "target", "secs",
		    "runs", "runs/s", "cov", "corpus", "rss MB", "result"
	printf "%-10s %6d %12d %9d %6d %7d %8d  %s\n", v["target"], v["secs"],
	    v["execs"], v["rate"], v["cov"], v["units"], v["rss"], v["result"]
	runs += v["execs"]
	t += v["secs"]
	bad += v["result"] != "ok"
}
END {
	printf "total: %d targets, %d runs in %d s, %d failed " \
	    "(crash, hang, leak or sanitizer report)\n", n, runs, t, bad
}' "$log"
tail -n 1 "$log"
exit $rc
