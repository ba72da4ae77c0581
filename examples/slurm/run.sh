#!/bin/sh
# slurm: spirt-train in a Slurm allocation, each gradient function an
# srun job step on one of the nodes, reading the model and data and
# writing its gradient through this peer's URL with a function's
# credentials; aggregation and update stay here, in the peer's store.
# Then the same training with xargs on this machine: the same model bytes.
#
#   sh run.sh [workdir]
#   LISTEN=10.0.0.1:7070 sh run.sh /srv/spirt
#
# Needs a Slurm cluster (sinfo answers; SLURM_CONF names its slurm.conf
# if not the default) with FUNCTIONS nodes free (default 3);
# tests/64-slurm.bats makes one on one machine and runs this in it.
# LISTEN: the address the nodes reach this machine at (default
# 127.0.0.1:0, any free port: nodes on this machine).  STEPS (default
# 10).  The nodes need the tools on their PATH and this work directory's
# key and token files at the same path (a shared file system).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
PATH="$here/../..:$PATH"                # the tools, when run from the tree
listen=${LISTEN:-127.0.0.1:0} steps=${STEPS:-10} fns=${FUNCTIONS:-3}
data=${FMNIST:-/usr/share/datasets/fashion-mnist}
sinfo -h >/dev/null 2>&1 || {
	echo "slurm: no Slurm cluster answers here (sinfo fails)" >&2
	exit 69
}
work=${1:-$(mktemp -d)}
mkdir -p "$work" && cd "$work"
store="$work/peer.db"

# 1. keys: the group's (kept offline in real use), this peer's, and a
#    function's (role "function": models and data in, gradients out)
[ -e group.key ] || spirt-key keygen -p group.pub group.key >/dev/null
for m in p1 f1; do
	[ -e $m.key ] || spirt-key keygen $m.key >$m.hex
done
spirt-key invite -o p1.tok -g group.key -i p1 -r r1 "$(cat p1.hex)"
# one token for the fan-out over p1's workers 0 .. fns-1, its id their
# binding (one token a worker keeps each worker's slot its own)
spirt-key invite -o f1.tok -R function -g group.key -i "p1.w0-$((fns - 1))" \
    -r r1 "$(cat f1.hex)"

# 2. the data, sharded for the functions; a copy for step 4
if [ ! -e "$store" ]; then
	spirt-shard -s "$store" -q -n "$fns" --seed 1 \
	    "$data/train-images-idx3-ubyte.gz" "$data/train-labels-idx1-ubyte.gz"
	spirt-shard -s "$store" -q -d test "$data/t10k-images-idx3-ubyte.gz" \
	    "$data/t10k-labels-idx1-ubyte.gz"
	cp -R "$store" "$work/xargs.db"
fi

# 3. this peer serves its store to the nodes
#    (SPIRT_PARENT: the server ends with this script, even one killed
#    outright, whose EXIT trap does not run)
rm -f ready && mkfifo ready
SPIRT_PARENT=$$ SPIRT_KEY=p1.key SPIRT_TOKEN=p1.tok SPIRT_GROUP=group.pub \
    spirt-peer serve -q -s "$store" -l "$listen" -F 3 3>ready &
srv=$!
trap 'kill -TERM $srv 2>/dev/null || :' EXIT
read -r addr <ready
echo "serving $store at http://$addr"
#    an allocation of $fns nodes (salloc runs spirt-train here); each
#    step's functions are $fns job steps of one task each, side by side
#    (--exclusive: each its own CPU); -Q: no srun chatter
fn="env SPIRT_STORE=http://$addr SPIRT_KEY=$work/f1.key"
fn="$fn SPIRT_TOKEN=$work/f1.tok SPIRT_GROUP=$work/group.pub"
salloc -Q -N "$fns" env SPIRT_FANOUT="xargs -P $fns -I{} srun -N 1 -n 1 \
--exclusive -Q $fn" spirt-train -q --cold -s "$store" -n "$fns" -b 16 \
    --steps "$steps"
tail -n 1 "$store.train-mlp.tsv"

# 4. the same training with xargs on this machine: the same model bytes
spirt-train -q --cold -s "$work/xargs.db" -n "$fns" -b 16 --steps "$steps"
a=$(spirt-store -s "$store" get "model/mlp@$steps" | cksum)
b=$(spirt-store -s "$work/xargs.db" get "model/mlp@$steps" | cksum)
[ "$a" = "$b" ] || { echo "srun and xargs differ" >&2; exit 1; }
echo "model/mlp@$steps: srun and xargs identical ($a)"
