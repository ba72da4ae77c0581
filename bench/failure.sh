#!/bin/bash
# bench/failure.sh - the recovery time after a peer is killed: spirt's
# three peers with heartbeats (spirt-train --beat) against PyTorch DDP
# (gloo) under torchrun, the elastic agent a user would otherwise have,
# the same event in the same run.
#   bash bench/failure.sh        (after make all)
#
# Each round, interleaved: start three peers (three processes for DDP),
# let them train WARM steps, SIGKILL one (peer 2's driver; rank 2), and
# time, on a survivor (peer 0; rank 0):
#   first   the kill to the first step completed after it;
#   steady  the kill to the completion of the 5th step after it (the
#           survivors back at their pace).
# spirt: 3 peers on this machine (stores by path), 2 functions x batch 32
# each, the default budget (beat 1 s, suspect 3 s, dead 10 s) unless
# BEAT is set; target: steady <= 2 x the dead threshold.  torchrun:
# --max_restarts 3, --monitor_interval 1, c10d rendezvous on loopback; a
# checkpoint every 10 steps, from which the restarted group resumes
# (--redirects=1 --tee=1: Debian's torch 1.13 on Python 3.11 cannot parse
# the default 0, an enum.Flag change).
# Times are wall clock on one host (date, time.time()), medians.
# Both sides start from spirt-train's model@0 (seed 1; DDP loads it:
# bench/start.sh), though what is timed here is the recovery, not the
# training.
#
# Environment: REPS (rounds, default 3), WARM (steps before the kill,
# default 20), BEAT (spirt's beat interval in ms, default 1000).
set -eu
cd "$(dirname "$0")/.."
. bench/cpu.sh
. bench/start.sh
PY=/usr/bin/python3
FMNIST=${FMNIST:-/usr/share/datasets/fashion-mnist}
PATH="$PWD:$PATH"
export PATH FMNIST
unset SPIRT_STORE SPIRT_SYNC SPIRT_THREADS OMP_NUM_THREADS OPENBLAS_NUM_THREADS
reps=${REPS:-3} warm=${WARM:-20} beat=${BEAT:-1000}
dead=$((10 * beat))
root=$PWD

bench_header bench/failure
[ -r "$FMNIST/train-images-idx3-ubyte.gz" ] || {
	echo "skipped: no Fashion-MNIST (dataset-fashion-mnist)"; exit 0; }
tmp=$(mktemp -d)
kids=
trap 'for k in $kids; do kill -KILL $k 2>/dev/null || :; done; rm -rf "$tmp"' EXIT

now() { date +%s%N; }
med() {
	sort -g | awk '{ v[NR] = $1 } END {
		if (NR == 0) print "-"
		else print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
# wait_for SECONDS CMD...: until CMD succeeds, polling every 20 ms
wait_for() {
	local end=$(($(now) + $1 * 1000000000))
	shift
	until "$@"; do
		[ "$(now)" -lt "$end" ] || return 1
		sleep 0.02
	done
}
newest() {      # newest STORE: the newest model step in STORE, or -1
	spirt-store -s "$1" ls model/mlp@ 2>/dev/null | cut -f1 |
	    sed 's/.*@//' | sort -n | tail -n 1 | grep . || echo -1
}
past() { [ "$(newest "$1")" -ge "$2" ]; }

# spirt ROUND: prints "first steady" in seconds
spirt_round() {
	local d="$tmp/spirt$1" i p pk kill0 s0 t1 t5
	mkdir "$d"
	(
	cd "$d"
	: >peers
	for i in 0 1 2; do
		spirt-key keygen p$i.key >/dev/null
		echo "p$i $d/s$i" >>peers
	done
	# the data once, as each driver would shard it
	spirt-shard -s base -q -n 6 --seed 1 \
	    "$FMNIST/train-images-idx3-ubyte.gz" \
	    "$FMNIST/train-labels-idx1-ubyte.gz"
	spirt-shard -s base -q -d test "$FMNIST/t10k-images-idx3-ubyte.gz" \
	    "$FMNIST/t10k-labels-idx1-ubyte.gz"
	for i in 0 1 2; do cp -r base s$i; done
	)
	for i in 0 1 2; do
		(cd "$d" && SPIRT_KEY=p$i.key SPIRT_ID=p$i SPIRT_RUN=r1 exec \
		    spirt-train -q -s s$i -n 2 --peers peers --peer $i \
		    --steps 100000 --eval-every 100000 --deadline 60000 \
		    --beat "$beat" >o$i 2>e$i) &
		eval "p$i=\$!"
		kids="$kids $!"
	done
	wait_for 600 past "$d/s0" "$warm" || { echo "- -"; return; }
	kill0=$(now)
	s0=$(newest "$d/s0")
	# (the driver and everything it started)
	pk=$(pgrep -P "$p2" | tr '\n' ' ')
	kill -KILL $p2 $pk 2>/dev/null || :
	wait_for 600 past "$d/s0" $((s0 + 1)) || { echo "- -"; return; }
	t1=$(now)
	wait_for 600 past "$d/s0" $((s0 + 5)) || { echo "- -"; return; }
	t5=$(now)
	for p in $p0 $p1; do
		kill -TERM $p 2>/dev/null || :
		wait $p 2>/dev/null || :
	done
	awk -v a=$((t1 - kill0)) -v b=$((t5 - kill0)) 'BEGIN {
		printf "%.2f %.2f\n", a / 1e9, b / 1e9 }'
}

# ddp ROUND: prints "first steady" in seconds
ddp_round() {
	local d="$tmp/ddp$1" port w pid r2 kill0 s0 t1 t5
	mkdir "$d"
	port=$($PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	DDP_INIT=$tmp/start.spt $PY -m torch.distributed.run --nnodes=1 --nproc_per_node=3 \
	    --max_restarts=3 --monitor_interval=1 --rdzv_backend=c10d \
	    --rdzv_endpoint="127.0.0.1:$port" --rdzv_id="b$1" \
	    --redirects=1 --tee=1 --log_dir="$d/tl" \
	    "$root/bench/ddp_elastic.py" "$d/log" 32 100000 10 \
	    >"$d/out" 2>"$d/err" &
	pid=$!
	kids="$kids $pid"
	last0() { tail -n 1 "$d/log.0" 2>/dev/null | cut -d' ' -f1 | grep . || echo -1; }
	ddp_past() { [ "$(last0)" -ge "$1" ]; }
	# steps after the kill are counted from the line count of rank 0's
	# log (a restarted group goes back to its checkpoint)
	lines() { wc -l <"$d/log.0" 2>/dev/null || echo 0; }
	ddp_more() { [ "$(lines)" -ge "$1" ]; }
	wait_for 180 ddp_past "$warm" || { echo "- -"; return; }
	# rank 2: the worker whose log is log.2
	r2=$(pgrep -f "ddp_elastic.py $d/log" | while read -r w; do
		grep -q "LOCAL_RANK=2" "/proc/$w/environ" 2>/dev/null &&
		    tr '\0' '\n' <"/proc/$w/environ" | grep -qx 'RANK=2' &&
		    echo "$w"; done | head -n 1)
	[ -n "$r2" ] || { echo "- -"; return; }
	kill0=$(now)
	s0=$(lines)
	kill -KILL "$r2"
	wait_for 300 ddp_more $((s0 + 1)) || { echo "- -"; return; }
	t1=$(now)
	wait_for 300 ddp_more $((s0 + 5)) || { echo "- -"; return; }
	t5=$(now)
	pkill -TERM -P "$pid" 2>/dev/null || :
	kill -TERM "$pid" 2>/dev/null || :
	wait "$pid" 2>/dev/null || :
	pkill -KILL -f "ddp_elastic.py $d/log" 2>/dev/null || :
	awk -v a=$((t1 - kill0)) -v b=$((t5 - kill0)) 'BEGIN {
		printf "%.2f %.2f\n", a / 1e9, b / 1e9 }'
}

echo
echo "Recovery after a peer is killed: 3 peers (3 ranks), one SIGKILLed after"
echo "$warm steps; seconds from the kill to the survivor's first step, and to"
echo "its 5th; $reps interleaved rounds, medians.  spirt's budget: beat $beat ms,"
echo "dead $dead ms (target: steady <= $((2 * dead / 1000)) s)."
have_ddp=1
$PY -c 'import torch.distributed' 2>/dev/null || have_ddp=0
[ "$have_ddp" -eq 0 ] || start_model mlp:784-256-128-10 1 "$tmp/start.spt"
: >"$tmp/s" ; : >"$tmp/t"
for r in $(seq 1 "$reps"); do
	x=$(spirt_round "$r")
	echo "   round $r spirt:   first ${x% *} s, steady ${x#* } s"
	echo "$x" >>"$tmp/s"
	if [ "$have_ddp" -eq 1 ]; then
		y=$(ddp_round "$r")
		echo "   round $r torchrun: first ${y% *} s, steady ${y#* } s"
		echo "$y" >>"$tmp/t"
	fi
done
sf=$(cut -d' ' -f1 "$tmp/s" | grep -v -- - | med)
ss=$(cut -d' ' -f2 "$tmp/s" | grep -v -- - | med)
echo
printf '   %-34s %8s %8s\n' "" "first" "steady"
printf '   %-34s %7ss %7ss\n' "spirt (beat $beat ms, dead $dead ms)" "$sf" "$ss"
if [ "$have_ddp" -eq 1 ]; then
	tf=$(cut -d' ' -f1 "$tmp/t" | grep -v -- - | med)
	ts=$(cut -d' ' -f2 "$tmp/t" | grep -v -- - | med)
	printf '   %-34s %7ss %7ss\n' "torchrun DDP gloo (restart group)" "$tf" "$ts"
	awk -v a="$ss" -v b="$ts" 'BEGIN { if (a > 0 && b > 0)
		printf "   steady: spirt / torchrun = %.2f\n", a / b }'
else
	echo "   torchrun: skipped (no python3-torch: deps/debian-bench)"
fi
awk -v a="$ss" -v d="$dead" 'BEGIN { if (a > 0)
	printf "   steady / dead threshold = %.2f (target <= 2)\n", a * 1000 / d }'
echo "   load average: $(cut -d' ' -f1-3 /proc/loadavg)"
