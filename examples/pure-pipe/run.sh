#!/bin/sh
# pure-pipe: train Fashion-MNIST with no store at all.  The data and the
# model are plain record files; each step is one shell pipeline
#   grad (x4, to stdout) | agg (stdin to stdout) | update (model file)
#
#   sh run.sh [workdir]          STEPS=n (default 20), EVERY=n (default 5)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
PATH="$here/../..:$PATH"                # the tools, when run from the tree
data=${FMNIST:-/usr/share/datasets/fashion-mnist}
steps=${STEPS:-20} every=${EVERY:-5}
work=${1:-$(mktemp -d)}
mkdir -p "$work" && cd "$work"
unset SPIRT_STORE                       # nothing here may touch a store

# 1. the training set as a data file: 4 shuffled shards, one per worker
#    (x then y record for each, spirt-tensor(5)); the test set as 1 shard
spirt-shard -q -n 4 --seed 1 -o train.spt \
    "$data/train-images-idx3-ubyte.gz" "$data/train-labels-idx1-ubyte.gz"
spirt-shard -q -o test.spt \
    "$data/t10k-images-idx3-ubyte.gz" "$data/t10k-labels-idx1-ubyte.gz"

# 2. a model file: model/mlp@0 as a record (name = spec, step = 0)
spirt-init -q -S 1 -o model.spt mlp:784-256-128-10

# evaluate: test loss and accuracy of the model file, on one line
evaluate() {
	spirt-eval -q -p model.spt -D test.spt | awk -F= '
		$1 == "step" { s = $2 } $1 == "loss" { l = $2 }
		$1 == "accuracy" { a = $2 }
		END { printf "step %3d  test loss %.4f  accuracy %.4f\n", s, l, a }'
}
evaluate

# 3. the training loop.  Each step t:
#    - four gradient functions, worker w taking its minibatch of pair w of
#      train.spt for the model's step (the step is read from model.spt),
#      each writing one gradient record to stdout;
#    - spirt-agg reads the four records from stdin and writes their mean;
#    - spirt-update applies it with Adam (state kept as the model file's
#      second record) and replaces model.spt atomically with step t+1.
#    The functions run one after another here; they could equally run on
#    four machines, their records concatenated in any order (spirt-agg
#    sorts its inputs, so the result is bit-identical).
t=0
while [ "$t" -lt "$steps" ]; do
	for w in 0 1 2 3; do
		spirt-grad -q -p model.spt -D train.spt -w "$w" -S 1 -b 64 -o -
	done | spirt-agg -q | spirt-update -q -p model.spt -o model.spt \
	    --opt adam -r 0.002
	t=$((t + 1))
	[ $((t % every)) -ne 0 ] || evaluate
done

# 4. the result is an ordinary record file: inspect it
spirt-store inspect model.spt | grep -E '^(record|name|step|shape)='
