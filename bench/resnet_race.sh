#!/bin/sh
# bench/resnet_race.sh - issue 37's race: resnet8 to a test accuracy on
# Fashion-MNIST, `spirt-train -m resnet8` with its defaults (4 functions
# x 32, Adam 0.002 with its schedule, 5 epochs) against PyTorch on the
# same cores, both from spirt's model@0 of the round's seed
# (bench/start.sh, checked), in interleaved rounds; round r seeds both
# r + 1.  Training seconds on both sides, evaluation excluded (the log's
# seconds; torch_train.py's clock), beside steps and ms a step.
#   sh bench/resnet_race.sh          (after make all)
#
# Environment:
#   TARGET=acc     the test accuracy (default 0.91)
#   ROUNDS=n       interleaved rounds (default 1: a round is minutes)
#   EVERY=n        evaluate every n steps of 128 samples, both sides
#                  (default 100)
#   TORCH_CFGS     PyTorch's configurations, "threads:batch:lr ...",
#                  threads 1, 2 or 2p as bench/train.sh's sweep (default
#                  "2:128:0.002": spirt's global batch and lr); with more
#                  than one, each round takes the fastest to the target
#   OUT=dir        keep every evaluation of both sides there (spirt's
#                  log, spirt.SEED.tsv; torch's, torch.SEED.tsv: batch
#                  steps lr seconds accuracy), for the times to a lower
#                  accuracy on the way
set -eu
cd "$(dirname "$0")/.."
. bench/cpu.sh
. bench/start.sh
PY=/usr/bin/python3
FMNIST=${FMNIST:-/usr/share/datasets/fashion-mnist}
PATH="$PWD:$PATH"
export PATH FMNIST
target=${TARGET:-0.91} rounds=${ROUNDS:-1} every=${EVERY:-100}
cfgs=${TORCH_CFGS:-2:128:0.002}
unset SPIRT_STORE SPIRT_SYNC SPIRT_THREADS OMP_NUM_THREADS OMP_WAIT_POLICY \
    OPENBLAS_NUM_THREADS
core=$(env -u OPENBLAS_CORETYPE spirt-grad -V |
	sed -n 's/^OpenBLAS core \([^ ]*\) (\([a-z]*\)).*/\1/p')
OPENBLAS_CORETYPE=$core
export OPENBLAS_CORETYPE
bench_header bench/resnet_race
echo "resnet8:1x28x28-10 to $target; OpenBLAS core $core on both sides;"
echo "torch $($PY -c 'import torch; print(torch.__version__)'), configurations $cfgs"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
med() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"
		else print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

r=0
while [ "$r" -lt "$rounds" ]; do
	seed=$((r + 1))
	start_model resnet8:1x28x28-10 "$seed" "$tmp/start.spt"
	# spirt: its defaults; "seconds steps accuracy" at the first
	# evaluation reaching the target ("-" seconds if none did)
	rm -rf "$tmp/s.db"*
	# (a deadline for spirt-eval's 10,000 images under load: 30 s ran
	# out at load 10)
	spirt-train -q -s "$tmp/s.db" --data "$FMNIST" -m resnet8 -S "$seed" \
	    --eval-every "$every" --target "$target" --deadline 600000 ||
		{ echo "bench/resnet_race: spirt-train failed" >&2; exit 1; }
	awk -F'\t' -v t="$target" 'NR > 1 && $6 != "-" {
		s = $1; n = $2; a = $6; if (a >= t) { hit = 1; exit } }
		END { print (hit ? s : "-"), n, a }' "$tmp/s.db".train-*.tsv |
		tee -a "$tmp/spirt" | sed "s/^/round $seed spirt: s steps acc /"
	[ -z "${OUT:-}" ] || cp "$tmp/s.db".train-*.tsv "$OUT/spirt.$seed.tsv"
	rm -rf "$tmp/s.db"*
	# torch: each configuration; the fastest to the target
	: >"$tmp/t.$seed"
	for c in $cfgs; do
		j=${c%%:*} bl=${c#*:}
		TORCH_TRAIN_LOG=${OUT:+$OUT/torch.$seed.tsv} \
		    $PY bench/torch_train.py -i "$tmp/start.spt" -S "$seed" -j "$j" \
		    resnet8 adam 5 $((every * 128)) "$target" "$bl" |
			awk -F'\t' -v j="$j" '{ print ($6 == 1 ? $4 : "-"), $3,
			    $5, j ":" $1 ":" $2 }' | tee -a "$tmp/t.$seed" |
			sed "s/^/round $seed torch: s steps acc cfg /"
	done
	best=$(grep -v '^-' "$tmp/t.$seed" | sort -g | sed 1q || :)
	[ -n "$best" ] || best=$(sed 1q "$tmp/t.$seed")
	echo "$best" >>"$tmp/torch"
	r=$((r + 1))
done

echo
printf '%-6s %9s %7s %9s %9s\n' side seconds steps "ms/step" accuracy
for side in spirt torch; do
	s=$(awk '$1 != "-" { print $1 }' "$tmp/$side" | med)
	n=$(awk '{ print $2 }' "$tmp/$side" | med)
	ms=$(awk '$1 != "-" { print 1e3 * $1 / $2 }' "$tmp/$side" | med)
	a=$(awk '{ print $3 }' "$tmp/$side" | med)
	eval "${side}_s=\$s ${side}_n=\$n ${side}_ms=\$ms"
	printf '%-6s %9s %7s %9s %9s\n' "$side" "$s" "$n" "$ms" "$a"
done
echo "(medians over $rounds round(s); \"-\": $target not reached in 5 epochs)"
# shellcheck disable=SC2154
awk -v a="$spirt_s" -v b="$torch_s" -v n="$spirt_n" -v m="$torch_n" \
    -v c="$spirt_ms" -v d="$torch_ms" 'BEGIN {
	if (a == "-" || b == "-") { print "ratio: -"; exit }
	printf "spirt / torch: time %.2f (target <= 0.8), steps %.2f, " \
	    "ms a step %.2f\n", a / b, n / m, c / d }'
