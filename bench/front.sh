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
#    no step ("already trained"); wall and CPU (user + sys of the
#    whole tree of processes, getrusage's children), medians and ratios.
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
# (python for the clock: /usr/bin/time counts in 10 ms, the start is tens)
"${PYTHON:-/usr/bin/python3}" - "$old/spirt-train" "$new/spirt-train" \
    "$rounds" <<'PY'
import resource, statistics as st, subprocess, sys, time
bins = {"old": sys.argv[1], "new": sys.argv[2]}
wall = {"old": [], "new": []}
cpu = {"old": [], "new": []}
def children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime
for i in range(int(sys.argv[3])):
    for w in ("old", "new"):
        c0, t0 = children(), time.perf_counter()
        subprocess.run([bins[w], "-q", "-s", "t.db", "--steps", "1"],
                       check=True)
        wall[w].append(time.perf_counter() - t0)
        cpu[w].append(children() - c0)
for w in ("old", "new"):
    print("%s: %d runs, wall median %.1f ms (%.1f-%.1f), cpu median %.1f ms"
          % (w, len(wall[w]), 1e3 * st.median(wall[w]), 1e3 * min(wall[w]),
             1e3 * max(wall[w]), 1e3 * st.median(cpu[w])))
print("old/new: wall %.2fx, cpu %.2fx"
      % (st.median(wall["old"]) / st.median(wall["new"]),
         st.median(cpu["old"]) / st.median(cpu["new"])))
PY
