#!/bin/bash
# bench/chaos.sh - chaos during a 3-peer run, the long form of
# tests/67-chaos: FAULTS (default 1000) SIGKILLs and SIGSTOP/SIGCONTs to
# every kind of process of three peers over loopback HTTP, after an
# uninterrupted run of the same configuration (the reference), both by
# tests/chaos.sh in this one run.
#   bash bench/chaos.sh        (after make all)
#
# Prints tests/chaos.sh's figures (faults per kind and signal, launches,
# the reference's and the chaos run's accuracy and their difference),
# then the cost of each kind of fault: the step-time excess from the
# fault to the next one, (time between them) - (group steps made between
# them) x (the reference's time per step), its median per kind and
# signal, in ms.  Faults overlap (a STOP's pause runs on past the next
# fault; a restarted driver rejoins while the next fault lands), so a
# kind's figure includes some of the cost of what it overlapped: read
# them as ratios between kinds, on the same machine in the same run.
#
# Environment: FAULTS (1000), SEED (random, printed), EPOCHS (epochs of
# both runs: 15, enough steps for the faults: 12 ran out at 963 of
# 1000 on a 2-CPU machine), DIR (a scratch directory).
set -u
cd "$(dirname "$0")/.." || exit 70
. bench/cpu.sh
PATH="$PWD:$PATH"
FAULTS=${FAULTS:-1000}
EPOCHS=${EPOCHS:-15}
dir=${DIR:-$(mktemp -d "${TMPDIR:-/tmp}/spirt-chaos.XXXXXX")}
mkdir -p "$dir" || exit 1
bench_header bench/chaos
echo "== chaos: $FAULTS faults, 3 peers x 2 functions x batch 32, $EPOCHS epochs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
out=$dir/out
env CHAOS_FAULTS=$FAULTS CHAOS_EPOCHS=$EPOCHS CHAOS_REF=1 \
    CHAOS_TIMEOUT=$((FAULTS * 4 + 600)) ${SEED:+CHAOS_SEED=$SEED} \
    bash tests/chaos.sh "$dir/run" >"$out" 2>"$dir/err"
rc=$?
cat "$out"
[ "$rc" -eq 0 ] || { echo "chaos: FAILED (exit $rc): $(cat "$dir/run/bugs" 2>/dev/null | head -n 5)"; }
ref_ms=$(sed -n 's/^reference_ms=//p' "$out")
steps=$(sed -n 's/^steps=//p' "$out")
echo "== the cost of a fault: step-time excess to the next fault (median, ms; reference $(awk -v r="$ref_ms" -v s="$steps" 'BEGIN { if (s > 0) printf "%.1f", r / s }') ms a step)"
awk -v r="${ref_ms:-0}" -v s="${steps:-1}" '
$2 != "-" {
	t = $1; g = 0; k = ""; sg = ""
	for (i = 3; i <= NF; i++) {
		split($i, a, "=")
		if (a[1] == "kind") k = a[2]
		if (a[1] == "sig") sg = a[2]
		if (a[1] == "g") g = a[2]
	}
	if (n) {
		x = (t - pt) - (g - pg) * r / s
		c[pk " " ps] = c[pk " " ps] " " x
	}
	pt = t; pg = g; pk = k; ps = sg; n++
}
END {
	for (key in c) {
		m = split(substr(c[key], 2), v, " ")
		for (i = 1; i <= m; i++)
			for (j = i + 1; j <= m; j++)
				if (v[j] < v[i]) { w = v[i]; v[i] = v[j]; v[j] = w }
		med = m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
		printf "cost_%s_%s_ms=%.0f (n=%d)\n", substr(key, 1, index(key, " ") - 1),
		    substr(key, index(key, " ") + 1), med, m
	}
}' "$dir/run/faults" | sort
echo "(scratch: $dir)"
exit "$rc"
