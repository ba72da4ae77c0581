#!/bin/sh
# bench/grad.sh - spirt-grad's kernels, cold start and peak memory against
# PyTorch, side by side, one thread each, on the OpenBLAS core spirt picks.
#   sh bench/grad.sh [reps]      (after make all bench/grad_bench)
#   ROUNDS=n sets the number of interleaved rounds (default 9).
set -e
cd "$(dirname "$0")/.."
. bench/cpu.sh
reps=${1:-300}
PY=/usr/bin/python3
FMNIST=${FMNIST:-/usr/share/datasets/fashion-mnist}
export PATH="$PWD:$PATH"

# the core spirt picks for this CPU (an OPENBLAS_CORETYPE in the
# environment is set aside: both sides at their best); PyTorch loads the
# same OpenBLAS (openblas-pthread/libblas.so.3) and gets the same core for
# its Linear layers.  Its convolutions do not use OpenBLAS: Debian's torch
# 1.13 runs them with oneDNN (libdnnl), its own JIT kernels.
core=$(env -u OPENBLAS_CORETYPE spirt-grad -V |
	sed -n 's/^OpenBLAS core \([^ ]*\) (\([a-z]*\)).*/\1 \2/p')
OPENBLAS_CORETYPE=${core% *}
export OPENBLAS_CORETYPE
# torch.set_num_threads(1) does not reach OpenBLAS in this build
# (BLAS_INFO=generic): without OPENBLAS_NUM_THREADS=1 its sgemm runs on
# every core, which is not the one-thread comparison and, on a small
# machine, is slower (thread hand-off per call).  Pin it to one thread.
OPENBLAS_NUM_THREADS=1
export OPENBLAS_NUM_THREADS
echo "OpenBLAS core: $core; torch $($PY -c 'import torch; print(torch.__version__)')"
bench_header bench/grad

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Interleave the two sides, many short rounds, so load from other
# processes on the machine falls on both alike; each round prints one
# median per (model, batch); we report the median over the rounds.
rounds=${ROUNDS:-9}
rreps=$((reps / 3 > 20 ? reps / 3 : 20))
r=0
while [ "$r" -lt "$rounds" ]; do
	./bench/grad_bench "$rreps" >>"$tmp/spirt"
	$PY bench/grad_torch.py "$rreps" >>"$tmp/torch"
	r=$((r + 1))
done
med() {         # median of a key over the rounds
	grep "^$1 $2 batch=$3 " "$tmp/$1" | sed "s/.* $4=\([0-9.]*\).*/\1/" |
		sort -n | awk '{ v[NR] = $1 } END {
			print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
spread() {      # smallest and largest over the rounds
	grep "^$1 $2 batch=$3 " "$tmp/$1" | sed "s/.* $4=\([0-9.]*\).*/\1/" |
		sort -n | sed -n '1p;$p' | paste -sd- -
}

table() {       # the medians of KEY: each model's line and the ratio
	printf '%-22s %5s %8s %-15s %8s %-15s %6s\n' model batch spirt \
		range torch range ratio
	grep '^spirt ' "$tmp/spirt" | sort -u -k2,3 |
	while read -r _ spec b _; do
		b=${b#batch=}
		ms=$(med spirt "$spec" "$b" "$1")
		tm=$(med torch "$spec" "$b" "$1")
		printf '%-22s %5s %8.3f %-15s %8.3f %-15s %6.2f\n' "$spec" \
			"$b" "$ms" "$(spread spirt "$spec" "$b" "$1")" "$tm" \
			"$(spread torch "$spec" "$b" "$1")" \
			"$(awk "BEGIN { print $ms / $tm }")"
	done
}

echo
echo "forward+backward per minibatch, ms: median of $rounds interleaved rounds"
echo "(range over rounds); ratio of medians, target <= 0.70"
table fwdbwd_ms
echo
echo "the same, each side's thread CPU time (the machine's other load not"
echo "counted, but its cache misses are), ms"
table cpu_ms

echo
echo "MLP step GFLOP/s vs the same sgemm calls alone, medians (target >= 60%)"
grep '^spirt mlp' "$tmp/spirt" | sort -u -k2,3 | while read -r _ spec b _; do
	b=${b#batch=}
	g=$(med spirt "$spec" "$b" gflops)
	sg=$(med spirt "$spec" "$b" sgemm_gflops)
	printf '%-24s %6s %8.1f / %8.1f = %5.1f%%\n' "$spec" "$b" \
		"$g" "$sg" "$(awk "BEGIN { print 100 * $g / $sg }")"
done

echo
echo "cold start: whole process to gradient committed, median ms (target <= 1/50)"
export SPIRT_STORE="$tmp/db"
spirt-shard -q -n 4 "$FMNIST/train-images-idx3-ubyte.gz" \
	"$FMNIST/train-labels-idx1-ubyte.gz"
spirt-init -m mlp mlp:784-256-128-10
sp=$(./bench/grad_bench --exec 30 spirt-grad -m mlp -t 0 -w 0 -b 64 |
	sed 's/exec_ms=//')
cat >"$tmp/cold.py" <<'PYEOF'
import torch, torch.nn as nn, torch.nn.functional as F
torch.set_num_threads(1)
net = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128),
                    nn.ReLU(), nn.Linear(128, 10))
x, y = torch.rand(64, 784), torch.randint(0, 10, (64,))
F.cross_entropy(net(x), y).backward()
torch.save([p.grad for p in net.parameters()], "/dev/null")
PYEOF
tp=$(./bench/grad_bench --exec 5 $PY "$tmp/cold.py" | sed 's/exec_ms=//')
printf 'spirt-grad %.2f ms, python+torch %.1f ms: ratio 1/%.0f\n' "$sp" \
	"$tp" "$(awk "BEGIN { print $tp / $sp }")"

echo
echo "peak memory (max RSS) of resnet8:1x28x28-10 at batch 64, one thread, MB"
# a warm function (spirt-grad -i, 12 gradients of 4 workers' minibatches
# from the store's shards) against a PyTorch process doing 10
# forward+backward passes of the same net, and import torch alone
spirt-init -m r8 resnet8:1x28x28-10
rss() {
	./bench/grad_bench --rss "$@" | sed -n 's/^maxrss_kb=//p'
}
sr=$(seq 0 11 | awk '{ print 0, $1 % 4 }' |
	rss spirt-grad -i -q -m r8 -b 64)
tr=$(rss $PY bench/grad_torch.py 10 resnet8:1x28x28-10 64)
ti=$(rss $PY -c 'import torch')
printf 'spirt-grad -i %.0f, torch %.0f (import torch alone %.0f): ratio %.2f\n' \
	"$(awk "BEGIN { print $sr / 1024 }")" \
	"$(awk "BEGIN { print $tr / 1024 }")" \
	"$(awk "BEGIN { print $ti / 1024 }")" \
	"$(awk "BEGIN { print $sr / $tr }")"
