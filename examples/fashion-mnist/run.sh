#!/bin/sh
# fashion-mnist: the main workflow, spirt-train on Fashion-MNIST, a few
# steps by default; then one more step by hand, the same commands the
# driver runs, checked to give the bytes spirt-train gives.
#
#   sh run.sh [workdir [spirt-train options]]
#   sh run.sh /tmp/fm -e 5          the full run: 5 epochs, spirt-train defaults
#   STEPS=n EVERY=n sh run.sh       a short run of n steps (default 40, 20)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
PATH="$here/../..:$PATH"                # the tools, when run from the tree
work=${1:-$(mktemp -d)}
[ $# -eq 0 ] || shift
mkdir -p "$work" && cd "$work"
store="$work/fmnist.db"
export SPIRT_STORE="$store"
data=${FMNIST:-/usr/share/datasets/fashion-mnist}

# 1. spirt-train does everything, each stage a plain command:
#    - spirt-shard: the 60000 training images, shuffled with the seed, into
#      4 shards (one per function) under data/train/, the 10000 test images
#      under data/test/;
#    - spirt-init: model/mlp@0, an MLP 784-256-128-10 (spirt-model(5));
#    - per step t: 4 gradient functions (spirt-grad, kept warm: one process
#      each serving step after step), each writing grad/t/w; spirt-agg
#      writes their mean as agg/t; spirt-update applies it with Adam,
#      writing model/mlp@t+1 and opt/mlp@t+1 in one transaction;
#    - spirt-eval on the test set every --eval-every steps;
#    - a log (fmnist.db.train-mlp.tsv) and a plot (.png, when
#      gnuplot is there) next to the store.
#    Interrupt it (Ctrl-C) and run the same command again: it resumes at
#    the last committed step.
if [ $# -gt 0 ]; then
	spirt-train --data "$data" "$@"
	exit
fi
steps=${STEPS:-40} every=${EVERY:-20}
# the settings are spelled out, since step 2 repeats them by hand
set -- -n 4 -b 64 -S 1 -m mlp -o adam -l 0.002 --schedule cosine -e 5
spirt-train -q --data "$data" "$@" --steps "$steps" --eval-every "$every"
echo "log $store.train-mlp.tsv:"
cat "$store.train-mlp.tsv"

# 2. one more step by hand, t = $steps, as spirt-train --cold runs it.
#    The cosine schedule spans the 5 epochs: 60000/4 = 15000 samples per
#    function, ceil(15000/64) = 235 steps per epoch (the last one of
#    24 samples), 1175 in all.
cp -R "$store" "$work/copy.db"          # for step 3; no writer is running
cp "$store.train-mlp.tsv" "$work/copy.db.train-mlp.tsv"
t=$steps
export SPIRT_THREADS=1                  # 4 functions share the cores
#    the M gradient functions, side by side: grad/$t/0 .. grad/$t/3
seq 0 3 | xargs -P 4 -I{} spirt-grad -q -m mlp -t "$t" -w {} -b 64 -S 1
spirt-store ls "grad/$t/"
#    aggregate them into agg/$t (-R: replace one a crashed run left)
spirt-agg -q -R -t "$t"
spirt-store show "agg/$t" | grep -E '^(count|samples|loss)='
#    apply agg/$t to model/mlp@$t: model/mlp@$((t + 1)), keeping 2 versions
spirt-update -q -m mlp -r 0.002 --opt adam --schedule cosine \
    --lr-total 1175 --keep 2 -t "$t"
spirt-store ls model/
spirt-eval -m mlp -t $((t + 1)) | grep -E '^(step|loss|accuracy)='

# 3. the driver, resuming the copy for the same step, writes the same bytes
spirt-train -q --data "$data" -s "$work/copy.db" "$@" --steps $((t + 1)) \
    --eval-every "$every"
a=$(spirt-store get "model/mlp@$((t + 1))" | cksum)
b=$(spirt-store -s "$work/copy.db" get "model/mlp@$((t + 1))" | cksum)
[ "$a" = "$b" ] || { echo "by hand and by spirt-train differ" >&2; exit 1; }
echo "model/mlp@$((t + 1)): by hand and by spirt-train identical ($a)"
