#!/bin/sh
# bench/floor.sh - where a warm MLP step's milliseconds go, at batch 1 (the
# workflow's floor: kernels next to nothing) and batch 64 (the race's):
# medians over the steps, not means, so that a stall of the shared
# machine moves no figure.
#   sh bench/floor.sh            (after make all)
#
# Two drivers of the same warm tools (4 spirt-grad --serve, spirt-agg -R
# -P -r mean --serve, spirt-update momentum --serve):
# - bench/warm_step.py -p stamps every hand-off of every step: the grad
#   phase to the first and to the last function's answer, spirt-agg,
#   spirt-update, and the rest (its own driving; Python, select(2) on the
#   tools' pipes, no spirt-run);
# - spirt-train itself (the sh driver over spirt-run and its FIFOs), whose
#   log gives the training clock every 50 steps (ms resolution): its step
#   is the median of those 50-step blocks, and its driver's cost is that
#   step less the tools' parts measured by warm_step.py in the same round.
# Runs of the two at each batch are interleaved, RUNS rounds; the medians
# are over every step of every round (the first WARM steps of a run
# dropped), and the range is that of the rounds' own medians.
#
# Environment:
#   RUNS=n      rounds (default 3)
#   STEPS=n     steps of each warm_step.py run after the warm-up (default 40)
#   WARM=n      warm-up steps dropped from each run (default 5)
#   TSTEPS=n    steps of each spirt-train run (default 300, 6 blocks of 50)
#   BATCHES=".."  batches per function (default "1 64")
set -eu
cd "$(dirname "$0")/.."
. bench/cpu.sh
PY=/usr/bin/python3
FMNIST=${FMNIST:-/usr/share/datasets/fashion-mnist}
PATH="$PWD:$PATH"
export PATH FMNIST
runs=${RUNS:-3} steps=${STEPS:-40} warm=${WARM:-5} tsteps=${TSTEPS:-300}
batches=${BATCHES:-1 64}
unset SPIRT_STORE SPIRT_SYNC SPIRT_THREADS OMP_NUM_THREADS OMP_WAIT_POLICY \
    OPENBLAS_NUM_THREADS
# (the core spirt picks for this CPU, as bench/train runs it)
core=$(env -u OPENBLAS_CORETYPE spirt-grad -V |
	sed -n 's/^OpenBLAS core \([^ ]*\) (\([a-z]*\)).*/\1/p')
OPENBLAS_CORETYPE=$core
export OPENBLAS_CORETYPE
bench_header bench/floor
echo "MLP 784-256-128-10, 4 functions x batch B, momentum 0.9, the mean,"
echo "--sync meta; $runs rounds x $steps steps (warm_step.py, after $warm"
echo "dropped) and x $tsteps steps (spirt-train), interleaved; OpenBLAS $core"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
med() {         # med: median of the numbers on stdin ("-" if none)
	sort -g | awk '{ v[NR] = $1 } END {
		if (NR == 0) print "-"
		else if (NR % 2) printf "%.3f\n", v[(NR + 1) / 2]
		else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
range() {       # range: "min-max" of the numbers on stdin
	sort -g | awk 'NR == 1 { a = $1 } { b = $1 } END {
		if (NR == 0) print "-"; else printf "%.2f-%.2f\n", a, b }'
}

base=$tmp/base.db
SPIRT_STORE=$base spirt-shard -q -n 4 --seed 1 \
    "$FMNIST/train-images-idx3-ubyte.gz" "$FMNIST/train-labels-idx1-ubyte.gz"
SPIRT_STORE=$base spirt-init -q -m mlp -S 1 mlp:784-256-128-10

r=1
while [ "$r" -le "$runs" ]; do
	for b in $batches; do
		lr=0.05; [ "$b" -gt 1 ] || lr=0.01
		rm -rf "$tmp/run.db"
		cp -a "$base" "$tmp/run.db"
		SPIRT_SYNC=meta $PY bench/warm_step.py -p "$tmp/run.db" mlp 4 \
		    "$b" 1 "$lr" $((steps + warm)) |
		    awk -v w="$warm" -v r="$r" '$1 >= w { print r "\t" $0 }' \
		    >>"$tmp/ws.$b"
		rm -rf "$tmp/run.db" "$tmp/tr.db"*
		spirt-train -q -s "$tmp/tr.db" --data "$FMNIST" -m mlp \
		    --spec mlp:784-256-128-10 -n 4 -b "$b" -S 1 -o momentum \
		    -l "$lr" --schedule constant --steps "$tsteps" \
		    --eval-every 100000 >/dev/null 2>&1 ||
			{ echo "bench/floor: spirt-train -b $b failed" >&2; exit 70; }
		# (the clock every 50 steps; the first block holds the tools'
		# start, and is dropped)
		awk -F'\t' -v r="$r" 'NR > 2 && $2 % 50 == 0 {
			if (p != "") print r "\t" 1e3 * ($1 - p) / ($2 - s)
			p = $1; s = $2 }' "$tmp/tr.db.train-mlp.tsv" >>"$tmp/tr.$b"
		rm -rf "$tmp/tr.db"*
	done
	r=$((r + 1))
done

# part B C: the median of column C of the per-step file for batch B
# (columns of ws.B: round step whole grad agg update driver first)
part() { awk -F'\t' -v c="$2" '{ print $c }' "$tmp/ws.$1" | med; }
prange() {      # the rounds' medians of column C, min-max
	for _r in $(seq "$runs"); do
		awk -F'\t' -v c="$2" -v r="$_r" '$1 == r { print $c }' \
		    "$tmp/ws.$1" | med
	done | range
}
echo
for b in $batches; do
	n=$(wc -l <"$tmp/ws.$b")
	echo "batch $b per function (4 x $b a step), ms, medians of $n steps" \
	    "[rounds' medians]:"
	for k in 8:"grad phase, to the first function's answer" \
	    4:"grad phase, to the last function's answer" \
	    5:"spirt-agg (mean of 4, in the store)" \
	    6:"spirt-update (momentum)" \
	    7:"driver between them (warm_step.py)" \
	    3:"whole step (warm_step.py)"; do
		printf '  %-46s %7s  [%s]\n' "${k#*:}" "$(part "$b" "${k%%:*}")" \
		    "$(prange "$b" "${k%%:*}")"
	done
	ts=$(awk -F'\t' '{ print $2 }' "$tmp/tr.$b" | med)
	tools=$(awk -v g="$(part "$b" 4)" -v a="$(part "$b" 5)" \
	    -v u="$(part "$b" 6)" 'BEGIN { printf "%.3f", g + a + u }')
	printf '  %-46s %7s  [%s]\n' "whole step (spirt-train, 50-step blocks)" \
	    "$ts" "$(for _r in $(seq "$runs"); do
		awk -F'\t' -v r="$_r" '$1 == r { print $2 }' "$tmp/tr.$b" | med
	    done | range)"
	printf '  %-46s %7s\n' "  less the tools' parts: spirt-train's driver" \
	    "$(awk -v t="$ts" -v s="$tools" 'BEGIN { printf "%.3f", t - s }')"
	printf '  %-46s %s\n' "shares of spirt-train's step:" \
	    "$(awk -v t="$ts" -v g="$(part "$b" 4)" -v a="$(part "$b" 5)" \
	    -v u="$(part "$b" 6)" -v f="$(part "$b" 8)" 'BEGIN {
		printf "grad %.0f%% (first answer %.0f%%), agg %.0f%%, update %.0f%%, driver %.0f%%",
		    100 * g / t, 100 * f / t, 100 * a / t, 100 * u / t,
		    100 * (t - g - a - u) / t }')"
	echo
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
