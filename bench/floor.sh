#!/bin/sh
# bench/floor.sh - where a warm MLP step's milliseconds go, at batch 1 (the
# workflow's floor: kernels next to nothing) and batch 64 (the race's):
# medians over the steps, not means, so that a stall of the shared
# machine moves no figure.
#   sh bench/floor.sh            (after make all)
#
# Two drivers of the same warm tools (4 spirt-grad --serve, writing their
# gradients into their slots: to=slot; spirt-update momentum --serve,
# which takes the mean of the slots itself: mean=slots, as spirt-train
# asks them with the mean on one peer, so spirt-agg's column is 0), each
# stamping every hand-off of every step: the grad phase to the first and
# to the last function's answer, spirt-agg, spirt-update, and the
# driver's own time between them (the rest of the step):
# - bench/warm_step.py -sp (Python, select(2) on the tools' pipes, no
#   spirt-run): the tools with next to no driver;
# - spirt-train itself, the sh driver over spirt-run and its FIFOs, with a
#   shim named spirt-run first in its PATH that relays the supervisor's
#   input and output through bench/run_stamp.py, which stamps each line.
#   A warm step is one request to spirt-run (fan ... then upd ...): the
#   relay sees its whole time, in the grad phase's row, not its parts.
#   The relay is one hop more each way: a plain spirt-train run beside it
#   (its log's clock every 50 steps, ms resolution, the first block
#   dropped: a mean, so it is compared with the stamped run's mean) says
#   what the relay costs a step.
# Runs of the three at each batch are interleaved, RUNS rounds; the
# medians are over every step of every round (the first WARM steps of a
# run dropped), and the range is that of the rounds' own medians.
#
# Environment:
#   RUNS=n      rounds (default 3)
#   STEPS=n     stamped steps of each run after the warm-up (default 40)
#   WARM=n      warm-up steps dropped from each stamped run (default 5)
#   TSTEPS=n    steps of each plain spirt-train run (default 300, 6 blocks
#               of 50)
#   BATCHES=".."  batches per function (default "1 64")
#   FNS=n       functions a step (default 4; 2 is the race's swept 2 x 128:
#               FNS=2 BATCHES=128)
set -eu
cd "$(dirname "$0")/.."
. bench/cpu.sh
PY=/usr/bin/python3
FMNIST=${FMNIST:-/usr/share/datasets/fashion-mnist}
PATH="$PWD:$PATH"
export PATH FMNIST
runs=${RUNS:-3} steps=${STEPS:-40} warm=${WARM:-5} tsteps=${TSTEPS:-300}
batches=${BATCHES:-1 64} fns=${FNS:-4}
unset SPIRT_STORE SPIRT_SYNC SPIRT_THREADS OMP_NUM_THREADS OMP_WAIT_POLICY \
    OPENBLAS_NUM_THREADS
# (the core spirt picks for this CPU, as bench/train runs it)
core=$(env -u OPENBLAS_CORETYPE spirt-grad -V |
	sed -n 's/^OpenBLAS core \([^ ]*\) (\([a-z]*\)).*/\1/p')
OPENBLAS_CORETYPE=$core
export OPENBLAS_CORETYPE
bench_header bench/floor
echo "MLP 784-256-128-10, $fns functions x batch B, momentum 0.9, the mean,"
echo "--sync meta; $runs rounds x $steps stamped steps (after $warm dropped)"
echo "and x $tsteps plain spirt-train steps, interleaved; OpenBLAS $core"

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
SPIRT_STORE=$base spirt-shard -q -n "$fns" --seed 1 \
    "$FMNIST/train-images-idx3-ubyte.gz" "$FMNIST/train-labels-idx1-ubyte.gz"
SPIRT_STORE=$base spirt-init -q -m mlp -S 1 mlp:784-256-128-10

# the shim: spirt-train's supervisor through the relay
mkdir "$tmp/shim"
cat >"$tmp/shim/spirt-run" <<EOF
#!/bin/sh
case "\${1-}" in
-d|--deadline)
	exec $PY "$PWD/bench/run_stamp.py" "$tmp/stamp" "$PWD/spirt-run" "\$@" ;;
esac
exec "$PWD/spirt-run" "\$@"
EOF
chmod +x "$tmp/shim/spirt-run"

# train B LR STEPS: spirt-train on a fresh store, FNS x batch B
train() {
	rm -rf "$tmp/tr.db"*
	spirt-train -q -s "$tmp/tr.db" --data "$FMNIST" -m mlp \
	    --spec mlp:784-256-128-10 -n "$fns" -b "$1" -S 1 -o momentum -l "$2" \
	    --schedule constant --steps "$3" --eval-every 100000 \
	    >/dev/null 2>&1 ||
		{ echo "bench/floor: spirt-train -b $1 failed" >&2; exit 70; }
}
# keep R: the lines of the per-step lines on stdin from step WARM on,
# prefixed with round R
keep() { awk -v w="$warm" -v r="$1" '$1 >= w { print r "\t" $0 }'; }

r=1
while [ "$r" -le "$runs" ]; do
	for b in $batches; do
		lr=0.05; [ "$b" -gt 1 ] || lr=0.01
		rm -rf "$tmp/run.db"
		cp -a "$base" "$tmp/run.db"
		SPIRT_SYNC=meta $PY bench/warm_step.py -sp "$tmp/run.db" mlp "$fns" \
		    "$b" 1 "$lr" $((steps + warm)) | keep "$r" >>"$tmp/ws.$b"
		rm -rf "$tmp/run.db" "$tmp/stamp".*
		PATH="$tmp/shim:$PATH" train "$b" "$lr" $((steps + warm + 1))
		i=0     # (the relay writes its stamps once spirt-run ended)
		until set -- "$tmp"/stamp.*; [ -e "$1" ]; do
			i=$((i + 1))
			[ "$i" -le 100 ] ||
				{ echo "bench/floor: no stamps" >&2; exit 70; }
			sleep 0.1
		done
		$PY bench/run_stamp.py -r "$tmp"/stamp.* | keep "$r" \
		    >>"$tmp/st.$b"
		train "$b" "$lr" "$tsteps"
		# (the clock every 50 steps; the first block holds the tools'
		# start, and is dropped)
		awk -F'\t' -v r="$r" 'NR > 2 && $2 % 50 == 0 {
			if (p != "") print r "\t" 1e3 * ($1 - p) / ($2 - s)
			p = $1; s = $2 }' "$tmp/tr.db.train-mlp.tsv" >>"$tmp/tr.$b"
		rm -rf "$tmp/tr.db"*
	done
	r=$((r + 1))
done

# part F C: the median of column C of per-step file F (ws.B: warm_step.py,
# st.B: spirt-train; columns: round step whole grad agg update driver
# first); prange F C: the rounds' medians of it, min-max
part() { awk -F'\t' -v c="$2" '{ print $c }' "$tmp/$1" | med; }
prange() {
	for _r in $(seq "$runs"); do
		awk -F'\t' -v c="$2" -v r="$_r" '$1 == r { print $c }' \
		    "$tmp/$1" | med
	done | range
}
echo
for b in $batches; do
	echo "batch $b per function ($fns x $b a step), ms, medians of" \
	    "$(wc -l <"$tmp/ws.$b") and $(wc -l <"$tmp/st.$b") steps" \
	    "[rounds' medians]:"
	printf '  %-42s %-20s %s\n' "" "warm_step.py" "spirt-train"
	for k in 8:"grad phase, to the first answer" \
	    4:"grad phase, to the last answer" \
	    5:"spirt-agg (0: the update takes the mean)" \
	    6:"spirt-update (the mean of $fns, momentum)" \
	    7:"driver between them" \
	    3:"whole step"; do
		c=${k%%:*}
		printf '  %-42s %6s %-13s %6s %s\n' "${k#*:}" \
		    "$(part "ws.$b" "$c")" "[$(prange "ws.$b" "$c")]" \
		    "$(part "st.$b" "$c")" "[$(prange "st.$b" "$c")]"
	done
	# (the relay's cost: means, as the plain run's log gives them)
	mean() { awk -F'\t' -v c="$1" '{ s += $c; n++ }
		END { if (n) printf "%.3f\n", s / n; else print "-" }'; }
	printf '  %-42s %6s %-13s %6s %s\n' "whole step, mean" \
	    "$(mean 3 <"$tmp/ws.$b")" "" "$(mean 3 <"$tmp/st.$b")" \
	    "(plain spirt-train: $(mean 2 <"$tmp/tr.$b"))"
	printf '  %-42s %s\n' "spirt-train's step, shares of its median:" \
	    "$(awk -v t="$(part "st.$b" 3)" -v g="$(part "st.$b" 4)" \
	    -v a="$(part "st.$b" 5)" -v u="$(part "st.$b" 6)" \
	    -v d="$(part "st.$b" 7)" -v f="$(part "st.$b" 8)" 'BEGIN {
		printf "grad %.0f%% (first answer %.0f%%), agg %.0f%%, update %.0f%%, driver %.0f%%",
		    100 * g / t, 100 * f / t, 100 * a / t, 100 * u / t,
		    100 * d / t }')"
	echo
done
echo "(the medians of the parts need not add up to the whole's)"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
