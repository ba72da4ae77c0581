#!/bin/sh
# bench/ab.sh - this tree against an older revision, side by side: the
# whole spirt-train run (driver, warm tools, store) and the warm step's
# parts (bench/warm_step.py), in interleaved rounds on the same data.
#   BEFORE=rev sh bench/ab.sh        (after make all)
#
# The older revision is built in a temporary directory (git archive, make
# all) and each round runs it and this tree one after the other, the one
# leading alternating, so the machine's drift falls on both.  Prints, for
# each, the median over the rounds and after/before:
#   train_s   spirt-train -m mlp -n 4 -b 64 for STEPS steps, wall seconds
#   step_ms   the warm step of bench/warm_step.py (4 x 64, the mean)
#   grad, agg, update, driver: its parts, ms
# Environment: BEFORE (required), REPS (default 5), STEPS (default 100).
set -eu
cd "$(dirname "$0")/.."
: "${BEFORE:?BEFORE=rev: the revision to compare against}"
reps=${REPS:-5} steps=${STEPS:-100}
FMNIST=${FMNIST:-/usr/share/datasets/fashion-mnist}
PY=${PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
old=$tmp/before
mkdir "$old"
git archive "$BEFORE" | tar -x -C "$old"
make -s -C "$old" -j2 all >"$tmp/build.log" 2>&1 ||
	{ tail -n 20 "$tmp/build.log" >&2; exit 70; }
new=$(pwd)
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
echo "bench/ab.sh: $(git rev-parse --short HEAD) against" \
    "$(git -C . rev-parse --short "$BEFORE"), $reps rounds, $cpu," \
    "$(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"

# the data and model@0 both sides start from (one store, copied a run)
base=$tmp/base.db
PATH=$new:$PATH SPIRT_STORE=$base spirt-shard -q -n 4 --seed 1 \
    "$FMNIST/train-images-idx3-ubyte.gz" "$FMNIST/train-labels-idx1-ubyte.gz"
PATH=$new:$PATH SPIRT_STORE=$base spirt-init -q -m mlp -S 1 \
    mlp:784-256-128-10

# one TREE SIDE: a whole run and a warm-step run, a line into $tmp/SIDE
one() {
	rm -rf "$tmp/run.db"
	cp -a "$base" "$tmp/run.db"
	t0=$(date +%s.%N)
	PATH=$1:$PATH SPIRT_STORE=$tmp/run.db spirt-train -q -m mlp -n 4 \
	    -b 64 -S 1 --steps "$steps" --eval-every 100000 \
	    >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
	t1=$(date +%s.%N)
	rm -rf "$tmp/run.db"
	cp -a "$base" "$tmp/run.db"
	ws=$(PATH=$1:$PATH $PY bench/warm_step.py "$tmp/run.db" mlp 4 64 1 \
	    0.05 "$steps")
	echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }') $ws" \
	    >>"$tmp/$2.txt"
}
r=0
while [ "$r" -lt "$reps" ]; do
	if [ $((r % 2)) -eq 0 ]; then
		one "$old/" before
		one "$new" after
	else
		one "$new" after
		one "$old/" before
	fi
	r=$((r + 1))
done
med() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
col() { awk -v c="$2" '{ print $c }' "$tmp/$1.txt" | med; }
printf '%-8s %10s %10s %8s\n' what before after ratio
for c in 1:train_s 2:step_ms 3:grad 4:agg 5:update 6:driver; do
	b=$(col before "${c%%:*}") a=$(col after "${c%%:*}")
	awk -v w="${c#*:}" -v b="$b" -v a="$a" \
	    'BEGIN { printf "%-8s %10.3f %10.3f %8.3f\n", w, b, a, a / b }'
done
