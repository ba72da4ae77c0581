#!/bin/bash
# bench/peer.sh - peers: the exchange's throughput over veth against curl,
# scaling with the number of peers, spirt's 3 peers against PyTorch DDP,
# and exchanges every H steps (spirt-train --every).
#   bash bench/peer.sh           (after make all; root for namespaces)
#
# 1. Exchange throughput: a 1e7-float aggregate record (40 MB) in peer
#    1's store, served by spirt-peer serve in namespace 1; peer 2 fetches
#    it from namespace 2 over veth through spirt_remote_get (spirt-store
#    -s http://... get: handshake, XChaCha20-Poly1305, every byte
#    authenticated), against curl fetching the same bytes from a static
#    server (python3 -m http.server) in the same namespace, interleaved,
#    each a fresh process, as a peer's pull is.  Medians; target >= 80%.
# 2. Scaling: 1 to 4 peers (spirt-train --peers, each peer 2 functions x
#    batch 64, stores on this machine), step time and samples/s.
# 3. spirt's 3 peers against PyTorch DDP (gloo, 3 processes, loopback):
#    the MLP to 85% at the same global batch (3 x 2 x 64), model,
#    optimiser (momentum 0.9, lr 0.05 constant) and evaluation interval.
# 4. Exchanges every H steps: H = 1, 10, 100 and the per-step exchange,
#    3 peers, the same samples: time per step and the final accuracy.
#
# Environment: PARTS (the sections to run, default "1 2 3 4"), REPS (rounds of 1, default 7), STEPS (steps of 2, default
# 30), RACE (rounds of 3, default 2), HSTEPS (steps of 4, default 200).
set -eu
cd "$(dirname "$0")/.."
. bench/cpu.sh
PY=/usr/bin/python3
FMNIST=${FMNIST:-/usr/share/datasets/fashion-mnist}
PATH="$PWD:$PATH"
export PATH FMNIST
unset SPIRT_STORE SPIRT_SYNC SPIRT_THREADS OMP_NUM_THREADS OPENBLAS_NUM_THREADS
parts=${PARTS:-1 2 3 4}
on() { case " $parts " in *" $1 "*) return 0 ;; esac; return 1; }
reps=${REPS:-7} nsteps=${STEPS:-30} race=${RACE:-2} hsteps=${HSTEPS:-200}

bench_header bench/peer
tmp=$(mktemp -d)
# namespaces (tests/netns.bash): removed by netns_teardown at exit, by its
# INT/TERM traps, and by its reaper if this script is killed outright
NETNS_NET=10.79.0
. tests/netns.bash
trap 'netns_teardown; rm -rf "$tmp"' EXIT

med() {         # med: median of the numbers on stdin ("-" if none)
	sort -g | awk '{ v[NR] = $1 } END {
		if (NR == 0) print "-"
		else print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
now() { date +%s%N; }

# ---- 1. exchange throughput over veth ----
if on 1; then
echo
echo "1. A 1e7-float aggregate (40 MB record) from peer 1 to peer 2 over veth,"
echo "   each fetch a fresh process; medians of $reps interleaved rounds"
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null 2>&1; then
	echo "   skipped: network namespaces need root and ip(8)"
else
	cd "$tmp"
	spirt-peer keygen p1.key >p1.hex
	spirt-peer keygen p2.key >p2.hex
	printf 'VERSION=1\nTYPE=spirt-allowlist\nMEMBER=%s peer p1\nMEMBER=%s peer p2\nEND\n' \
	    "$(cat p1.hex)" "$(cat p2.hex)" >allow
	mkdir www
	$PY -c "
import sys, numpy as np
sys.path.insert(0, '$OLDPWD/contrib/python')
import spirt_tensor as st
a = np.random.default_rng(1).standard_normal(10**7).astype(np.float32)
open('www/agg.rec', 'wb').write(st.encode(a, name='m:10000000', step=0, samples=64))"
	spirt-store -s s1 put xagg/0/p1 www/agg.rec
	netns_setup 2
	# (no job notices when teardown kills what runs in the namespaces)
	disown -a
	a1=$(netns_addr 1)
	mkfifo ready
	netns_exec 1 spirt-peer serve -q -s s1 -k p1.key -a allow -i p1 \
	    -r r1 -l "$a1:8700" -F 3 3>ready 2>srv.log &
	read -r -t 30 _ <ready
	disown -a
	netns_exec 1 $PY -m http.server --bind "$a1" -d www 8701 \
	    >/dev/null 2>&1 &
	disown -a
	netns_wait_port 1 8701
	sget() {
		netns_exec 2 env SPIRT_KEY=p2.key SPIRT_ID=p2 SPIRT_RUN=r1 \
		    SPIRT_ALLOW=allow spirt-store -s "http://$a1:8700" \
		    get xagg/0/p1
	}
	cget() { netns_exec 2 curl -sf "http://$a1:8701/agg.rec"; }
	# the same bytes on both sides
	[ "$(sget | md5sum)" = "$(cget | md5sum)" ] ||
		{ echo "bench/peer: the two fetches differ" >&2; exit 1; }
	[ "$(cget | wc -c)" -eq "$(wc -c <www/agg.rec)" ]
	: >sp; : >cu
	r=0
	while [ "$r" -lt "$reps" ]; do
		t=$(now); sget >/dev/null; echo $(($(now) - t)) >>sp
		t=$(now); cget >/dev/null; echo $(($(now) - t)) >>cu
		r=$((r + 1))
	done
	b=$(wc -c <www/agg.rec) s=$(med <sp) c=$(med <cu)
	awk -v b="$b" -v s="$s" -v c="$c" 'BEGIN {
		printf "   %-44s %8s %8s\n", "", "ms", "MB/s"
		printf "   %-44s %8.1f %8.0f\n", "spirt (authenticated, encrypted)",
		    s / 1e6, b / 1e6 / (s / 1e9)
		printf "   %-44s %8.1f %8.0f\n", "curl from python3 -m http.server",
		    c / 1e6, b / 1e6 / (c / 1e9)
		printf "   %-44s %7.0f%%  (target >= 80%%)\n",
		    "spirt / curl throughput", 100 * c / s }'
	printf '   min-max: spirt %s ms, curl %s ms\n' \
	    "$(sort -g sp | sed -n '1p;$p' | awk '{ printf "%s%.0f", (NR > 1 ? "-" : ""), $1 / 1e6 }')" \
	    "$(sort -g cu | sed -n '1p;$p' | awk '{ printf "%s%.0f", (NR > 1 ? "-" : ""), $1 / 1e6 }')"
	netns_teardown
	cd "$OLDPWD"
fi
fi

# train3 DIR P ARGS...: P peers (stores DIR/s0..), wait for all; the
# peers' logs are DIR/s<i>.train-mlp.tsv
trainp() {
	local d=$1 np=$2 i pids=
	shift 2
	mkdir -p "$d"
	: >"$d/peers"
	for i in $(seq 0 $((np - 1))); do
		[ -e "$tmp/p$i.pk" ] || spirt-peer keygen "$tmp/p$i.pk" >/dev/null
		echo "p$i $d/s$i" >>"$d/peers"
	done
	for i in $(seq 0 $((np - 1))); do
		SPIRT_KEY=$tmp/p$i.pk SPIRT_ID=p$i SPIRT_RUN=r1 \
		    timeout 1800 spirt-train -q -s "$d/s$i" --peers "$d/peers" \
		    --peer "$i" --deadline 120000 --data "$FMNIST" "$@" \
		    >"$d/o$i" 2>"$d/e$i" &
		pids="$pids $!"
	done
	# shellcheck disable=SC2086
	wait $pids || { cat "$d"/e* >&2; return 1; }
}
# lastline DIR: "seconds steps accuracy" of peer 0's log's last line
lastline() { awk -F'\t' 'END { print $1, $2, $6 }' "$1/s0.train-mlp.tsv"; }

# ---- 2. scaling ----
if on 2; then
echo
echo "2. Scaling at fixed work per peer: P peers, each 2 functions x batch 64,"
echo "   momentum lr 0.05, $nsteps steps, stores on this machine (the exchange"
echo "   reads peers' stores by path); ms per step from the peers' logs"
printf '   %5s %10s %10s %12s\n' peers ms/step samples/s "per peer"
for np in 1 2 3 4; do
	trainp "$tmp/sc$np" "$np" -n 2 -b 64 -o momentum -l 0.05 \
	    --schedule constant --steps "$nsteps" --eval-every 100000
	ms=$(for i in $(seq 0 $((np - 1))); do
		awk -F'\t' 'END { print 1e3 * $1 / $2 }' "$tmp/sc$np/s$i.train-mlp.tsv"
	done | med)
	awk -v p="$np" -v m="$ms" 'BEGIN {
		printf "   %5s %10.1f %10.0f %12.0f\n", p, m, p * 128e3 / m, 128e3 / m }'
	rm -rf "$tmp/sc$np"
done
fi

# ---- 3. against PyTorch DDP ----
if on 3; then
echo
echo "3. MLP to 85%, 3 peers x 2 functions x batch 64 (global 384), momentum"
echo "   0.9 lr 0.05 constant, evaluated every 25 steps; PyTorch DDP (gloo),"
echo "   3 processes x batch 128, one thread each, on loopback (DDP's"
echo "   rendezvous wants one address for all; spirt's peers share stores by"
echo "   path here too).  Medians of $race interleaved rounds."
: >"$tmp/sr"; : >"$tmp/dr"
r=0
while [ "$r" -lt "$race" ]; do
	trainp "$tmp/race" 3 -n 2 -b 64 -o momentum -l 0.05 \
	    --schedule constant --eval-every 25 --target 0.85 -e 5
	lastline "$tmp/race" >>"$tmp/sr"
	rm -rf "$tmp/race"
	$PY bench/ddp_train.py 3 128 0.05 25 0.85 5000 |
	    awk '{ print $2, $1, $3 }' >>"$tmp/dr"
	r=$((r + 1))
done
[ "$race" -gt 0 ] &&
printf '   %-24s %9s %6s %9s %8s\n' "" seconds steps accuracy ms/step &&
for f in sr:spirt dr:"PyTorch DDP"; do
	printf '   %-24s %9.2f %6s %9s %8.2f\n' "${f#*:}" \
	    "$(awk '{ print $1 }' "$tmp/${f%%:*}" | med)" \
	    "$(awk '{ print $2 }' "$tmp/${f%%:*}" | med)" \
	    "$(awk '{ print $3 }' "$tmp/${f%%:*}" | med)" \
	    "$(awk '{ print 1e3 * $1 / $2 }' "$tmp/${f%%:*}" | med)"
done
[ "$race" -eq 0 ] ||
awk -v a="$(awk '{ print $1 }' "$tmp/sr" | med)" \
    -v b="$(awk '{ print $1 }' "$tmp/dr" | med)" \
    -v c="$(awk '{ print 1e3 * $1 / $2 }' "$tmp/sr" | med)" \
    -v d="$(awk '{ print 1e3 * $1 / $2 }' "$tmp/dr" | med)" 'BEGIN {
	printf "   spirt / DDP: time to 85%% %.2f, time per step %.2f (target <= 1.0)\n",
	    a / b, c / d }'
fi

# ---- 4. every H steps ----
if on 4; then
echo
echo "4. Exchanges every H steps (spirt-train --every H): 3 peers x 2 functions"
echo "   x batch 64, momentum lr 0.05 constant, $hsteps steps ($((hsteps * 384))"
echo "   samples), test accuracy of the synced model at the end"
printf '   %-22s %8s %9s %10s\n' "" ms/step accuracy "vs per step"
base=
for h in 0 1 10 100; do
	set --
	[ "$h" -eq 0 ] || set -- --every "$h"
	trainp "$tmp/h$h" 3 -n 2 -b 64 -o momentum -l 0.05 \
	    --schedule constant --steps "$hsteps" --eval-every "$hsteps" "$@"
	read -r s n a <<EOF
$(lastline "$tmp/h$h")
EOF
	[ -n "$base" ] || base=$a
	lab="every $h"
	[ "$h" -ne 0 ] || lab="per step (gradients)"
	awk -v l="$lab" -v s="$s" -v n="$n" -v a="$a" -v b="$base" 'BEGIN {
		printf "   %-22s %8.1f %9s %+10.4f\n", l, 1e3 * s / n, a, a - b }'
	rm -rf "$tmp/h$h"
done
fi
