#!/bin/sh
# tests/fuzz/run.sh - run the libFuzzer harnesses (after `make fuzz`)
#
#   sh tests/fuzz/run.sh [-j jobs] [-s seed] [-t seconds] [-o dir] [target ...]
#
# For each target (default: all of tests/fuzz/corpus/): replay its
# committed inputs (tests/fuzz/regress/<target>/, inputs that once failed,
# and the seeds of tests/fuzz/corpus/<target>/), then fuzz for -t seconds
# (default 30) from a copy of the seeds, with the target's dictionary.  A
# crash, a hang (an input over 10 s), a leak, a sanitizer report or a
# harness check that fails is a failure; its input is kept in -o dir
# (default: a temporary directory, removed when all pass) and printed in
# base64.  One line per target, TAP style, then a summary line for each
# (`fuzz: target=... execs=...`, read by bench/fuzz.sh), then
# "N passed, N failed" as .ci/run sums it.  Exit 0 only when all passed.
# -j N runs N targets at a time (default 1: each alone, as bench/fuzz.sh
# wants its runs per second), each still for -t seconds: the CI stage
# runs 2, one a core.  -s N gives libFuzzer -seed=N: the CI stage runs
# with a fixed seed, so that what it finds on one commit it finds again
# (the mutations are the same; only how far it gets in -t seconds
# varies); bench/fuzz.sh explores with a fresh seed each run.
cd "$(dirname "$0")/../.." || exit 70
secs=30 keep='' jobs=1 seed=''
while getopts j:o:s:t: c; do
	case $c in
	j) jobs=$OPTARG ;;
	t) secs=$OPTARG ;;
	o) keep=$OPTARG ;;
	s) seed=$OPTARG ;;
	*) echo "usage: sh tests/fuzz/run.sh [-j jobs] [-s seed]" \
	    "[-t seconds] [-o dir] [target ...]" >&2; exit 64 ;;
	esac
done
shift $((OPTIND - 1))
case $secs in
''|*[!0-9]*) echo "run.sh: -t $secs: not a number of seconds" >&2; exit 64 ;;
esac
case $seed in
*[!0-9]*) echo "run.sh: -s $seed: not a number" >&2; exit 64 ;;
esac
case $jobs in
''|0|*[!0-9]*) echo "run.sh: -j $jobs: not a number of jobs" >&2; exit 64 ;;
esac
if [ $# -eq 0 ]; then
	# shellcheck disable=SC2046
	set -- $(ls tests/fuzz/corpus)
fi
out=${keep:-$(mktemp -d)} || exit 71
mkdir -p "$out" || exit 73

# dictionary of target t
dict() {
	case $1 in
	hs|msg|token|keyfile|allow|digest|xpart|peersrv|remote)
		echo tests/fuzz/dict/crypto.dict ;;
	*) echo "tests/fuzz/dict/$1.dict" ;;
	esac
}

# report NAME LOG: the failure's words and its input
report() {
	echo "not ok - fuzz: $1"
	grep -E 'ERROR|FUZZ_ASSERT|runtime error|SUMMARY|Test unit written' \
	    "$2" | head -n 20 | sed 's/^/#   /'
	for a in "$out/$1-"*; do
		[ -f "$a" ] || continue
		echo "#   input $a (base64):"
		base64 -w 76 "$a" | head -n 40 | sed 's/^/#     /'
	done
}

# one T: run target T; its result line (and report) in $out/T.res, its
# summary line in $out/T.sum, ok or fail in $out/T.rc
one() {
	t=$1
	bin=tests/fuzz/fuzz_$t
	rm -f "$out/$t.sum"
	if [ ! -x "$bin" ]; then
		echo "not ok - fuzz: $t: no $bin (make fuzz)" >"$out/$t.res"
		echo fail >"$out/$t.rc"
		return
	fi
	log=$out/$t.log
	work=$out/$t.corpus
	rm -rf "$work"
	mkdir -p "$work"
	dirs=tests/fuzz/corpus/$t
	[ -d "tests/fuzz/regress/$t" ] && dirs="tests/fuzz/regress/$t $dirs"
	# the committed inputs, once each
	# shellcheck disable=SC2086
	if ! "$bin" -runs=0 -timeout=10 $dirs >"$log" 2>&1; then
		report "$t (a committed input)" "$log" >"$out/$t.res"
		echo fail >"$out/$t.rc"
		return
	fi
	# then the fuzzing, the seeds' copy growing
	cp tests/fuzz/corpus/"$t"/* "$work"/
	start=$(date +%s)
	# shellcheck disable=SC2086
	"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
	    -dict="$(dict "$t")" -print_final_stats=1 ${seed:+-seed="$seed"} \
	    -artifact_prefix="$out/$t-" "$work" $dirs >"$log" 2>&1
	rc=$?
	el=$(( $(date +%s) - start ))
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	units=$(ls "$work" | wc -l)
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
	rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log")
	rate=$(( ${execs:-0} / (el > 0 ? el : 1) ))
	if [ "$rc" -eq 0 ] && [ -n "$execs" ]; then
		res=ok
		echo "ok - fuzz: $t: $execs runs in $el s ($rate/s), cov" \
		    "${cov:-?}, corpus $units, peak ${rss:-?} MB" >"$out/$t.res"
	else
		res=fail
		report "$t" "$log" >"$out/$t.res"
	fi
	echo "fuzz: target=$t secs=$el execs=${execs:-0} rate=$rate" \
	    "cov=${cov:-0} units=$units rss=${rss:-0} result=$res" \
	    >"$out/$t.sum"
	echo "$res" >"$out/$t.rc"
}

# lane I: targets I, I+jobs, I+2*jobs, ... one after another, each one's
# result printed as it ends
lane() {
	i=0
	for t in $all; do
		if [ $((i % jobs)) -eq "$1" ]; then
			one "$t"
			cat "$out/$t.res"
		fi
		i=$((i + 1))
	done
}

all=$*
l=0
while [ "$l" -lt "$jobs" ]; do
	lane "$l" &
	l=$((l + 1))
done
wait
pass=0 fail=0
for t in $all; do
	[ -f "$out/$t.sum" ] && cat "$out/$t.sum"
	if [ "$(cat "$out/$t.rc" 2>/dev/null)" = ok ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
	fi
done
[ -n "$keep" ] || [ "$fail" -gt 0 ] || rm -rf "$out"
[ "$fail" -eq 0 ] || echo "fuzz: inputs and logs in $out"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
