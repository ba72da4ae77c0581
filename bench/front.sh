#!/bin/sh
# bench/front.sh - spirt-train's start: the processes and the time before
# the first step, of two builds side by side (issue 34: the set-up checks
# in the front, cmd/train/checks.c, instead of tools the loop ran).
#   sh bench/front.sh OLD_DIR NEW_DIR [ROUNDS]
# Each DIR is a build tree's top (its spirt-train and tools beside it).
# 1. execve calls (strace -f) of one run, each build on its own copy of a
#    store sharded from Fashion-MNIST: "fresh" (no model: --steps 1 makes
#    model@0 and takes one step), "resume" (--steps 2 from model@1),
#    "refused" (-b past a worker's samples: the checks alone);
# 2. ROUNDS (default 15) interleaved runs, old then new, of --steps 1 on
#    a store whose model@1 is there: every check and the loop's set-up,
#    no step ("already trained"); /usr/bin/time's wall and CPU (user +
#    sys, the children's too), medians and ratios.
# Needs FMNIST (default /usr/share/datasets/fashion-mnist), strace for 1.
set -eu
[ $# -ge 2 ] || { echo "usage: sh bench/front.sh old_dir new_dir [rounds]" >&2; exit 64; }
old=$(cd "$1" && pwd) new=$(cd "$2" && pwd) rounds=${3:-15}
FMNIST=${FMNIST:-/usr/share/datasets/fashion-mnist}
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT INT TERM
cd "$d"
"$new/spirt-shard" -q -s base.db -n 4 --seed 1 \
    "$FMNIST/train-images-idx3-ubyte.gz" "$FMNIST/train-labels-idx1-ubyte.gz"
"$new/spirt-shard" -q -s base.db -d test \
    "$FMNIST/t10k-images-idx3-ubyte.gz" "$FMNIST/t10k-labels-idx1-ubyte.gz"

# execs FILE: the execve calls strace wrote to FILE
execs() { grep -c 'execve(' "$1"; }
if command -v strace >/dev/null; then
	for w in old new; do
		eval "b=\$$w"
		rm -rf s.db s.db.*
		cp -R base.db s.db
		strace -f -qq -e trace=execve -o f.tr "$b/spirt-train" -q \
		    -s s.db --steps 1 >/dev/null 2>&1
		strace -f -qq -e trace=execve -o r.tr "$b/spirt-train" -q \
		    -s s.db --steps 2 >/dev/null 2>&1
		strace -f -qq -e trace=execve -o x.tr "$b/spirt-train" -q \
		    -s s.db --steps 3 -b 20000 >/dev/null 2>&1 || :
		echo "$w: execve fresh $(execs f.tr) resume $(execs r.tr) refused $(execs x.tr)"
	done
fi

rm -rf t.db t.db.*
cp -R base.db t.db
"$new/spirt-train" -q -s t.db --steps 1
: >times
i=0
while [ "$i" -lt "$rounds" ]; do
	for w in old new; do
		eval "b=\$$w"
		/usr/bin/time -f "$w %e %U %S" -a -o times \
		    "$b/spirt-train" -q -s t.db --steps 1
	done
	i=$((i + 1))
done
awk '
function median(a, n,   i, j, t) {
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
			t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
		}
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
$1 == "old" { ow[++no] = $2; oc[no] = $3 + $4 }
$1 == "new" { nw[++nn] = $2; nc[nn] = $3 + $4 }
END {
	mow = median(ow, no); moc = median(oc, no)
	mnw = median(nw, nn); mnc = median(nc, nn)
	printf "old: %d runs, wall median %.3f s, cpu %.3f s\n", no, mow, moc
	printf "new: %d runs, wall median %.3f s, cpu %.3f s\n", nn, mnw, mnc
	printf "old/new: wall %.2fx, cpu %.2fx\n", mow / mnw,
	    (mnc > 0 ? moc / mnc : 0)
}' times
