#!/bin/sh
# tests/fuzz/run.sh - run the libFuzzer harnesses (after `make fuzz`)
#
#   sh tests/fuzz/run.sh [-t seconds] [-o dir] [target ...]
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
cd "$(dirname "$0")/../.." || exit 70
secs=30 keep=
while getopts o:t: c; do
	case $c in
	t) secs=$OPTARG ;;
	o) keep=$OPTARG ;;
	*) echo "usage: sh tests/fuzz/run.sh [-t seconds] [-o dir]" \
	    "[target ...]" >&2; exit 64 ;;
	esac
done
shift $((OPTIND - 1))
case $secs in
''|*[!0-9]*) echo "run.sh: -t $secs: not a number of seconds" >&2; exit 64 ;;
esac
if [ $# -eq 0 ]; then
	set -- $(ls tests/fuzz/corpus)
fi
out=${keep:-$(mktemp -d)} || exit 71
mkdir -p "$out" || exit 73
pass=0 fail=0 summary=

# dictionary of target t
dict() {
	case $1 in
	hs|msg|token|keyfile|allow|digest|peersrv|remote)
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

for t in "$@"; do
	bin=tests/fuzz/fuzz_$t
	if [ ! -x "$bin" ]; then
		fail=$((fail + 1))
		echo "not ok - fuzz: $t: no $bin (make fuzz)"
		continue
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
		fail=$((fail + 1))
		report "$t (a committed input)" "$log"
		continue
	fi
	# then the fuzzing, the seeds' copy growing
	cp tests/fuzz/corpus/"$t"/* "$work"/
	start=$(date +%s)
	# shellcheck disable=SC2086
	"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
	    -dict="$(dict "$t")" -print_final_stats=1 \
	    -artifact_prefix="$out/$t-" "$work" $dirs >"$log" 2>&1
	rc=$?
	el=$(( $(date +%s) - start ))
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	units=$(ls "$work" | wc -l)
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
	rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log")
	rate=$(( ${execs:-0} / (el > 0 ? el : 1) ))
	if [ "$rc" -eq 0 ] && [ -n "$execs" ]; then
		pass=$((pass + 1))
		res=ok
		echo "ok - fuzz: $t: $execs runs in $el s ($rate/s), cov" \
		    "${cov:-?}, corpus $units, peak ${rss:-?} MB"
	else
		fail=$((fail + 1))
		res=fail
		report "$t" "$log"
	fi
	summary="$summary
fuzz: target=$t secs=$el execs=${execs:-0} rate=$rate cov=${cov:-0} units=$units rss=${rss:-0} result=$res"
done
echo "$summary" | sed 1d
[ -n "$keep" ] || [ "$fail" -gt 0 ] || rm -rf "$out"
[ "$fail" -eq 0 ] || echo "fuzz: inputs and logs in $out"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
