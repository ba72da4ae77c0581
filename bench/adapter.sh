#!/bin/sh
# bench/adapter.sh - spirt-torch (a PyTorch module as a spirt function):
# a warm function's time per step against a plain PyTorch loop, the same
# init and batches, one thread each, pinned to one CPU, interleaved by
# turns of a few steps; and its cold start (docs/performance.md, "A
# PyTorch module as a function"; bench/adapter.py says how).
#   sh bench/adapter.sh [rounds] [steps]       (after make all)
# BATCHES="32 64 256" the batch sizes; BENCH_CPU=n the CPU to pin to.
# BEFORE=rev: the adapter of that git revision (its python/) runs beside
# this tree's in the same rounds, over that revision's spirt-store.
set -e
cd "$(dirname "$0")/.."
. bench/cpu.sh
PY=/usr/bin/python3
FMNIST=${FMNIST:-/usr/share/datasets/fashion-mnist}
export PATH="$PWD:$PATH" SPIRT_PYTHON=$PY
bench_header bench/adapter
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
# the example module of spirt-torch(1): a residual block on 1x28x28
sed -n '/^import torch$/,/^    return Res()$/p' man/spirt-torch.1 |
    sed 's/\\e/\\/g' >"$d/res.py"
spirt-shard -q -s "$d/s" -n 4 "$FMNIST/train-images-idx3-ubyte.gz" \
    "$FMNIST/train-labels-idx1-ubyte.gz"
spirt-torch init -q -s "$d/s" -m res --module "$d/res.py"
if [ -n "${BEFORE:-}" ]; then
	# its adapter and its spirt-store (the pipe's side of a step), built
	mkdir "$d/before"
	git archive "$BEFORE" | tar -x -C "$d/before"
	make -C "$d/before" -j2 spirt-store >/dev/null
fi
for b in ${BATCHES:-32 64 256}; do
	$PY bench/adapter.py "$d/s" "$d/res.py" res $b "${1:-30}" "${2:-4}" \
	    ${BEFORE:+"$d/before/python"}
done
