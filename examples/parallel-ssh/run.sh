#!/bin/sh
# parallel-ssh: spirt-train's gradient functions on other hosts, fanned
# out by GNU parallel over ssh (--sshlogin), each failed function tried
# again on another host (--retries), every job in a log (--joblog); the
# hosts reach this peer's store through its URL with a function's
# credentials.  Then the same training with xargs on this machine, which
# gives the same model bytes.
#
#   sh run.sh [workdir]
#   HOSTS=h2,h3,h4 LISTEN=10.0.0.1:7070 sh run.sh /srv/spirt
#
# HOSTS: parallel's sshlogins (default ":", this machine without ssh);
# ssh options come from ~/.ssh/config or PARALLEL_SSH ("ssh -F file").
# LISTEN: the address the hosts reach this machine at (default
# 127.0.0.1:0, any free port).  STEPS (default 10), FUNCTIONS (default 3).
# The hosts need the tools on their PATH and this work directory's key and
# token files at the same path (a shared file system, or copy them).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
PATH="$here/../..:$PATH"                # the tools, when run from the tree
hosts=${HOSTS:-:} listen=${LISTEN:-127.0.0.1:0}
steps=${STEPS:-10} fns=${FUNCTIONS:-3}
data=${FMNIST:-/usr/share/datasets/fashion-mnist}
work=${1:-$(mktemp -d)}
mkdir -p "$work" && cd "$work"
store="$work/peer.db"
# parallel's own files here, not in ~/.parallel
export PARALLEL_HOME="$work/.parallel"

# 1. keys: the group's (kept offline in real use), this peer's identity
#    and member token, and a function's: role "function" may read models
#    and data and write gradients, nothing else
[ -e group.key ] || spirt-key keygen -p group.pub group.key >/dev/null
for m in p1 f1; do
	[ -e $m.key ] || spirt-key keygen $m.key >$m.hex
done
spirt-key invite -o p1.tok -g group.key -i p1 -r r1 "$(cat p1.hex)"
# one token for the fan-out over p1's workers 0 .. fns-1, its id their
# binding (one token a worker keeps each worker's slot its own)
spirt-key invite -o f1.tok -R function -g group.key -i "p1.w0-$((fns - 1))" \
    -r r1 "$(cat f1.hex)"

# 2. the data, sharded for the functions, as spirt-train would do it;
#    a copy for step 4
if [ ! -e "$store" ]; then
	spirt-shard -s "$store" -q -n "$fns" --seed 1 \
	    "$data/train-images-idx3-ubyte.gz" "$data/train-labels-idx1-ubyte.gz"
	spirt-shard -s "$store" -q -d test "$data/t10k-images-idx3-ubyte.gz" \
	    "$data/t10k-labels-idx1-ubyte.gz"
	cp -R "$store" "$work/xargs.db"
fi

# 3. this peer serves its store; the functions on the hosts use its URL
#    (SPIRT_PARENT: the server ends with this script, even one killed
#    outright, whose EXIT trap does not run)
rm -f ready && mkfifo ready
SPIRT_PARENT=$$ SPIRT_KEY=p1.key SPIRT_TOKEN=p1.tok SPIRT_GROUP=group.pub \
    spirt-peer serve -q -s "$store" -l "$listen" -F 3 3>ready &
srv=$!
trap 'kill -TERM $srv 2>/dev/null || :' EXIT
read -r addr <ready
echo "serving $store at http://$addr"
#    spirt-train --cold hands each step's worker numbers to the fan-out,
#    which runs the spirt-grad command after its own words with {} the
#    worker; one job at a time per host (-j 1; on ":" all of them)
jobs=1
[ "$hosts" != : ] || jobs=$fns
fn="env SPIRT_STORE=http://$addr SPIRT_KEY=$work/f1.key"
fn="$fn SPIRT_TOKEN=$work/f1.tok SPIRT_GROUP=$work/group.pub"
#    the hosts' gradients have this machine's bits only with its OpenBLAS
#    kernels (spirt-grad(1), Determinism): an OPENBLAS_CORETYPE set here
#    goes with them (ssh passes no environment)
for v in OPENBLAS_CORETYPE OPENBLAS_L2_SIZE; do
	eval "x=\${$v-}"
	[ -z "$x" ] || fn="$fn $v=$x"
done
export SPIRT_FANOUT="parallel --will-cite -j $jobs -I{} --sshlogin $hosts \
--retries 2 --joblog +$work/jobs $fn"
spirt-train -q --cold -s "$store" -n "$fns" -b 16 --steps "$steps"
unset SPIRT_FANOUT
#    the joblog: one line per function (its last attempt), where it ran
echo "functions run, by host:"
awk -F'\t' '$1 != "Seq" { n[$2 " exit " $7]++ }
	END { for (h in n) print "  " h ": " n[h] }' jobs | sort
tail -n 1 "$store.train-mlp.tsv"

# 4. the same training with xargs on this machine: the same model bytes
spirt-train -q --cold -s "$work/xargs.db" -n "$fns" -b 16 --steps "$steps"
a=$(spirt-store -s "$store" get "model/mlp@$steps" | cksum)
b=$(spirt-store -s "$work/xargs.db" get "model/mlp@$steps" | cksum)
[ "$a" = "$b" ] || { echo "parallel and xargs differ" >&2; exit 1; }
echo "model/mlp@$steps: parallel and xargs identical ($a)"
