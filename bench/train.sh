#!/bin/sh
# bench/train.sh - the whole training workflow (spirt-train: processes,
# store, 4 functions per step) against PyTorch training the same model with
# the same global batch, optimiser and learning rate, one thread each, on
# the OpenBLAS core spirt picks; then where the milliseconds of a step go.
#   sh bench/train.sh            (after make all bench/grad_bench)
# Environment:
#   REPS=n              runs of each timed configuration (default 3; medians)
#   COLD_REPS=n         runs of the cold (process per invocation) workflow
#                       (default 1: it is slow)
#   BREAK_STEPS=n       steps timed per tool in the breakdown (default 100)
#   BENCH_TRAIN_CNN=1   also the CNN to 88% (about 1.5 min in all; off)
#   BENCH_TRAIN_ACC=x   accuracy after 5 default epochs: mlp (the default,
#                       about 20 s), all (mlp and cnn, about 2 min more), 0
set -eu
cd "$(dirname "$0")/.."
. bench/cpu.sh
PY=/usr/bin/python3
FMNIST=${FMNIST:-/usr/share/datasets/fashion-mnist}
export PATH="$PWD:$PATH"
reps=${REPS:-3} creps=${COLD_REPS:-1} nb=${BREAK_STEPS:-100}
unset SPIRT_STORE SPIRT_SYNC SPIRT_THREADS

# both sides on the core spirt picks for this CPU, one OpenBLAS thread (see
# bench/grad.sh for why OPENBLAS_NUM_THREADS is needed on the torch side)
core=$(env -u OPENBLAS_CORETYPE spirt-grad -V |
	sed -n 's/^OpenBLAS core \([^ ]*\) (\([a-z]*\)).*/\1 \2/p')
OPENBLAS_CORETYPE=${core% *} OPENBLAS_NUM_THREADS=1
export OPENBLAS_CORETYPE OPENBLAS_NUM_THREADS
echo "bench/train: OpenBLAS core $core, one thread; torch $($PY -c 'import torch; print(torch.__version__)')"
bench_header bench/train
echo "$reps runs each, medians"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

now() { date +%s.%N; }
med() {         # med: median of the numbers on stdin ("-" if none)
	sort -g | awk '{ v[NR] = $1 } END {
		if (NR == 0) print "-"
		else print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {
	if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f", a / b }'; }

# spirt NAME TARGET ARGS...: one spirt-train run in a fresh store; prints
# "seconds steps accuracy" at the first evaluation reaching TARGET (the
# log's seconds: training time, evaluation excluded), else "- steps acc"
# at the last one
spirt() {
	name=$1 tgt=$2
	shift 2
	rm -rf "$tmp/$name.db"*
	spirt-train -q -s "$tmp/$name.db" --data "$FMNIST" "$@" ||
		{ echo "bench/train: spirt-train $* failed" >&2; return 1; }
	awk -F'\t' -v t="$tgt" 'NR > 1 && $6 != "-" {
		s = $1; n = $2; a = $6; if (t > 0 && a >= t) { hit = 1; exit } }
		END { print (hit || t == 0 ? s : "-"), n, a }' "$tmp/$name.db.train.tsv"
	rm -rf "$tmp/$name.db"*
}
# torch MODEL BATCH OPT LR EPOCHS EVERY TARGET: the same, from
# bench/torch_train.py's "step seconds accuracy" lines
torch() {
	$PY bench/torch_train.py "$@" | awk -v t="$7" '{
		s = $2; n = $1; a = $3; if (t > 0 && a >= t) { hit = 1; exit } }
		END { print (hit || t == 0 ? s : "-"), n, a }'
}
col() { awk -v c="$1" '{ print $c }' | grep -v '^-$' | med; }

# ---- 1. MLP to 85%: warm, cold, each sync mode, and PyTorch ----
mlp="-m mlp -n 4 -b 64 -S 1 -o momentum -l 0.05 --schedule constant --eval-every 25 --target 0.85 -e 5"
for f in warm none full cold torch; do : >"$tmp/$f"; done
r=0
while [ "$r" -lt "$reps" ]; do       # interleaved: load falls on all alike
	spirt mlp 0.85 $mlp >>"$tmp/warm"
	torch mlp 256 momentum 0.05 5 25 0.85 >>"$tmp/torch"
	spirt mlp 0.85 $mlp --sync none >>"$tmp/none"
	spirt mlp 0.85 $mlp --sync full >>"$tmp/full"
	[ "$r" -ge "$creps" ] || spirt mlp 0.85 $mlp --cold >>"$tmp/cold"
	r=$((r + 1))
done
ts=$(col 1 <"$tmp/torch") tn=$(col 2 <"$tmp/torch")
echo
echo "MLP 784-256-128-10 to 85% test accuracy: 4 functions x batch 64 (global"
echo "256), SGD momentum 0.9, lr 0.05, evaluated every 25 steps; seconds ="
echo "training time to the first evaluation at >= 85% (evaluation excluded);"
echo "constant lr; reference: PyTorch, batch 256, same optimiser, lr and"
echo "schedule, one thread.  Bar: spirt warm (default sync) / torch <= 1.0"
printf '%-34s %8s %6s %9s %10s %12s\n' workflow seconds steps ms/step "vs torch" "all runs, s"
row() {         # row LABEL FILE
	s=$(col 1 <"$2") n=$(col 2 <"$2")
	printf '%-34s %8s %6s %9s %10s %12s\n' "$1" "$s" "$n" \
	    "$(awk -v s="$s" -v n="$n" 'BEGIN { if (s == "-") print "-"; else printf "%.2f", 1e3 * s / n }')" \
	    "$(ratio "$s" "$ts")" "$(awk '{ printf "%s%s", (NR > 1 ? "," : ""), $1 }' "$2")"
}
row "spirt warm, --sync meta (default)" "$tmp/warm"
row "spirt warm, --sync none" "$tmp/none"
row "spirt warm, --sync full" "$tmp/full"
row "spirt cold (--cold), --sync meta" "$tmp/cold"
row "PyTorch (reference)" "$tmp/torch"
echo "(a \"-\" means 85% was not reached in 5 epochs)"
msper() {       # msper FILE: median ms per step of the runs in FILE
	awk -v s="$(col 1 <"$1")" -v n="$(col 2 <"$1")" \
	    'BEGIN { if (s == "-") print "-"; else printf "%.2f", 1e3 * s / n }'
}
warmms=$(msper "$tmp/warm")

# ---- 2. the per-step cost of the warm workflow, tool by tool ----
# A store with nb steps of the same run (shards for 4 functions, the
# optimiser of section 1), built with cold commands and nothing pruned;
# then each --serve tool alone over those steps, wall-clock per step
# (the process starts once, as in the warm workflow).
b=$tmp/break.db
export SPIRT_STORE="$b" SPIRT_THREADS=1
spirt-shard -q -n 4 --seed 1 "$FMNIST/train-images-idx3-ubyte.gz" \
    "$FMNIST/train-labels-idx1-ubyte.gz"
spirt-init -q -m mlp -S 1 mlp:784-256-128-10
upd="spirt-update -q -m mlp -r 0.05 --opt momentum --momentum 0.9 --schedule constant --checkpoint 100"
t=0
while [ "$t" -lt "$nb" ]; do
	seq 0 3 | xargs -P 4 -I{} spirt-grad -q -m mlp -t "$t" -w {} -b 64 -S 1
	spirt-agg -q -t "$t"
	$upd -t "$t"
	t=$((t + 1))
done
steps() { seq 0 $((nb - 1)); }
perstep() {     # perstep CMD...: ms per step of CMD fed the nb steps
	a=$(now)
	"$@" >/dev/null
	awk -v a="$a" -v b="$(now)" -v n="$nb" 'BEGIN { printf "%.2f", 1e3 * (b - a) / n }'
}
grad1() { steps | spirt-grad -q --serve -m mlp -w 0 -b 64 -S 1; }
grad4() {
	for w in 0 1 2 3; do
		steps | spirt-grad -q --serve -m mlp -w "$w" -b 64 -S 1 >/dev/null &
	done
	wait
}
agg() { steps | spirt-agg -q -R --serve; }
# spirt-update needs each step's model and no later version: its own
# store holding model/mlp@0 and the aggregates; versions 1.. and the
# optimiser state are removed before each timed pass, so every step applies
u=$tmp/u.db
spirt-store get model/mlp@0 | spirt-store -s "$u" put model/mlp@0
steps | while read -r t; do
	spirt-store get "agg/$t" | spirt-store -s "$u" put "agg/$t"
done
timed_update() {
	{ spirt-store -s "$u" ls model/ | cut -f1 | grep -v '@0$'
	  spirt-store -s "$u" ls opt/ | cut -f1; } | xargs -r spirt-store -s "$u" rm
	steps >"$tmp/steps"
	perstep $upd -s "$u" --serve <"$tmp/steps"
}
kern=$(./bench/grad_bench 200 | sed -n 's/^spirt mlp:784-256-128-10 batch=64 fwdbwd_ms=\([0-9.]*\).*/\1/p')
: >"$tmp/bd"
for sync in meta none full; do
	export SPIRT_SYNC=$sync
	r=0
	while [ "$r" -lt "$reps" ]; do
		printf '%s g1 %s\n' $sync "$(perstep grad1)" >>"$tmp/bd"
		printf '%s g4 %s\n' $sync "$(perstep grad4)" >>"$tmp/bd"
		printf '%s agg %s\n' $sync "$(perstep agg)" >>"$tmp/bd"
		printf '%s upd %s\n' $sync "$(timed_update)" >>"$tmp/bd"
		r=$((r + 1))
	done
done
unset SPIRT_SYNC
bd() { awk -v s="$1" -v k="$2" '$1 == s && $2 == k { print $3 }' "$tmp/bd" | med; }
echo
echo "Per-step cost of the warm workflow, ms (each --serve tool alone over the"
echo "same $nb steps of a run with the settings above, wall clock / steps, median"
echo "of $reps; the process starts once, as in the warm workflow):"
printf '%-52s %8s %8s %8s\n' "" "meta" "none" "full"
for k in g1 g4 agg upd; do
	case $k in
	g1) l="spirt-grad, one function alone (1 of 4 per step)" ;;
	g4) l="spirt-grad, 4 functions side by side (grad phase)" ;;
	agg) l="spirt-agg (mean of 4, in the store)" ;;
	upd) l="spirt-update (momentum, --checkpoint 100 as spirt-train)" ;;
	esac
	printf '%-52s %8s %8s %8s\n' "$l" "$(bd meta $k)" "$(bd none $k)" "$(bd full $k)"
done
sums() { awk -v a="$(bd "$1" g4)" -v b="$(bd "$1" agg)" -v c="$(bd "$1" upd)" \
	'BEGIN { printf "%.2f", a + b + c }'; }
resid() { awk -v w="$1" -v t="$2" 'BEGIN { if (w == "-") print "-"; else printf "%.2f", w - t }'; }
printf '%-52s %8s %8s %8s\n' "sum of the 3 phases (grad x4, agg, update)" \
    "$(sums meta)" "$(sums none)" "$(sums full)"
printf '%-52s %8s %8s %8s\n' "spirt-train warm, whole step (section 1 medians)" \
    "$warmms" "$(msper "$tmp/none")" "$(msper "$tmp/full")"
printf '%-52s %8s %8s %8s\n' "  driver & hand-offs: whole step - sum (FIFOs, sh)" \
    "$(resid "$warmms" "$(sums meta)")" "$(resid "$(msper "$tmp/none")" "$(sums none)")" \
    "$(resid "$(msper "$tmp/full")" "$(sums full)")"
g4=$(bd meta g4)
printf '%-52s %8s\n' "kernels alone: forward+backward, batch 64 (grad_bench)" "$kern"
printf '%-52s %8s\n' "  x4 on $(nproc) cores, the ideal grad phase" \
    "$(awk -v k="$kern" -v c="$(nproc)" 'BEGIN { c = c > 4 ? 4 : c; printf "%.2f", 4 * k / c }')"
printf '%-52s %8s\n' "PyTorch, whole step of batch 256 (section 1)" \
    "$(awk -v s="$ts" -v n="$tn" 'BEGIN { printf "%.2f", 1e3 * s / n }')"

# ---- 3. overhead of the workflow over the kernels ----
echo
echo "Workflow overhead: samples/s of the warm workflow vs spirt-grad's"
echo "kernels alone on the same batches (4 x 64 per step), overhead ="
echo "1 - workflow/kernels.  Two readings of \"kernels alone\": the 4 batches"
echo "one after another (what computing them costs: one spirt-grad process"
echo "has one thread), and 4 at a time on the $(nproc) cores, as the workflow runs"
echo "them (the strict one: the workflow's parallelism is not credited)."
awk -v w="$warmms" -v wn="$(msper "$tmp/none")" -v k="$kern" -v c="$(nproc)" -v g="$g4" 'BEGIN {
	c = c > 4 ? 4 : c
	ks = 256 / (4 * k / c) * 1e3; gs = 256 / g * 1e3; k1 = 256 / (4 * k) * 1e3
	printf "%-52s %8.0f\n", "kernels alone, one after another, samples/s", k1
	printf "%-52s %8.0f\n", "kernels alone, on all cores (strict), samples/s", ks
	printf "%-52s %8.0f\n", "spirt-grad --serve x4 alone, samples/s", gs
	if (w == "-") { print "warm workflow: no figure (85% not reached)"; exit }
	ws = 256 / w * 1e3
	printf "%-52s %8.0f\n", "whole warm workflow (spirt-train), samples/s", ws
	printf "%-52s %7.0f%%  (target <= 20%%)\n", "overhead vs kernels one after another", 100 * (1 - ws / k1)
	printf "%-52s %7.0f%%  (target <= 20%%)\n", "overhead vs kernels on all cores (strict)", 100 * (1 - ws / ks)
	printf "%-52s %7.0f%%\n", "overhead vs the grad functions alone", 100 * (1 - ws / gs)
	if (wn == "-") exit
	printf "%-52s %8.0f\n", "whole warm workflow, --sync none, samples/s", 256 / wn * 1e3
	printf "%-52s %7.0f%%\n", "overhead vs kernels on all cores, --sync none", 100 * (1 - 256 / wn * 1e3 / ks)
}'

# The workflow's floor: the same warm workflow (4 functions, momentum,
# default sync) with batch 1, where the kernels cost next to nothing:
# what processes, the store and moving the model's bytes cost per step.
floor() {       # floor SPEC: ms per step over 400 steps of batch 1
	rm -rf "$tmp/floor.db"*
	spirt-train -q -s "$tmp/floor.db" --data "$FMNIST" -m mlp --spec "$1" \
	    -n 4 -b 1 -S 1 -o momentum -l 0.01 --schedule constant \
	    --steps 400 --eval-every 100000 >/dev/null 2>&1 || { echo -; return; }
	awk -F'\t' 'END { printf "%.2f", 1e3 * $1 / $2 }' "$tmp/floor.db.train.tsv"
	rm -rf "$tmp/floor.db"*
}
f1=$(floor mlp:784-1-10) f2=$(floor mlp:784-256-128-10)
echo
echo "The workflow's floor, ms per step with batch 1 (kernels next to nothing):"
printf '%-52s %8s\n' "a 784-1-10 model (processes, FIFOs, 6 commits)" "$f1"
printf '%-52s %8s\n' "the MLP (also its 0.94 MB model and gradients)" "$f2"
printf '%-52s %8s\n' "20% overhead on all cores allows, per step" \
    "$(awk -v k="$kern" -v c="$(nproc)" 'BEGIN { c = c > 4 ? 4 : c; printf "%.2f", 4 * k / c / 0.8 }')"
printf '%-52s %8s\n' "20% overhead one after another allows, per step" \
    "$(awk -v k="$kern" 'BEGIN { printf "%.2f", 4 * k / 0.8 }')"

# ---- 4. CNN to 88% (optional: long) ----
if [ "${BENCH_TRAIN_CNN:-0}" = 1 ]; then
	echo
	echo "CNN to 88%: spirt warm, 4 functions x batch 16 (global 64), Adam lr"
	echo "0.001 constant, evaluated every 50 steps, vs PyTorch batch 64, same"
	echo "optimiser and lr; seconds: training time to the first evaluation >= 88%"
	s=$(spirt cnn 0.88 -m cnn -n 4 -b 16 -S 1 -o adam -l 0.001 --schedule constant \
	    --eval-every 50 --target 0.88 -e 5)
	p=$(torch cnn 64 adam 0.001 5 50 0.88)
	printf '%-34s %8s %6s %9s\n' "" seconds steps accuracy
	printf '%-34s %8s %6s %9s\n' "spirt warm" $s
	printf '%-34s %8s %6s %9s\n' "PyTorch (reference)" $p
	echo "ratio spirt/torch: $(ratio "${s%% *}" "${p%% *}")"
else
	echo
	echo "CNN to 88%: skipped (about 1.5 min); BENCH_TRAIN_CNN=1 runs it"
fi

# ---- 5. accuracy after 5 epochs with spirt-train's defaults ----
acc=${BENCH_TRAIN_ACC:-mlp}
if [ "$acc" != 0 ]; then
	echo
	echo "Test accuracy after 5 epochs with spirt-train's defaults (whatever"
	echo "spirt-train -m MODEL picks: see its -h); bars: mlp >= 0.88, cnn >= 0.90"
	for m in mlp cnn; do
		[ "$m" = mlp ] || [ "$acc" = all ] || {
			echo "cnn: skipped (about 2 min); BENCH_TRAIN_ACC=all runs it"
			continue; }
		set -- $(spirt "acc$m" 0 -m "$m")
		bar=0.88; [ "$m" = mlp ] || bar=0.90
		printf '%s: accuracy %s after %s steps, %s s of training (bar %s: %s)\n' \
		    "$m" "$3" "$2" "$1" "$bar" \
		    "$(awk -v a="$3" -v b="$bar" 'BEGIN { print (a >= b ? "met" : "NOT met") }')"
	done
fi
