#!/bin/bash
# bench/peer.sh - peers: the exchange's throughput over veth against curl,
# scaling with the number of peers, spirt's 3 peers against PyTorch DDP,
# and exchanges every H steps (spirt-train --every).
#   bash bench/peer.sh   (after make all bench/xfer_bench, or make bench;
#                         root, for the namespaces of parts 1 and 3)
#
# 1. Exchange throughput: a 1e7-float aggregate record (40 MB) in peer
#    1's store, served by spirt-peer serve in namespace 1; peer 2 fetches
#    it from namespace 2 over veth through spirt_remote_get (a streamed,
#    XChaCha20-Poly1305 answer, every frame authenticated), against curl
#    fetching the same bytes from a static server (python3 -m
#    http.server) in the same namespace, interleaved.  Two ways: warm,
#    as the exchange pulls (bench/xfer_bench: one process, one session,
#    4 gets; against one curl with 4 URLs, keep-alive), the first get of
#    each left out; and cold, each fetch a fresh process (spirt-store
#    get: process, libcurl, key, handshake).  Medians; target >= 80%.
# 2. Scaling: 1 to 4 peers (spirt-train --peers, each peer 2 functions x
#    batch 64, stores on this machine), step time and samples/s; then
#    the 3 peers with heartbeats (--beat 100): what they cost a step.
# 3. spirt's 3 peers against PyTorch DDP (gloo, 3 processes), each side
#    in the same 3 network namespaces (spirt's peers over HTTP, DDP's
#    rendezvous at namespace 1's address): the MLP to 85% at the same
#    global batch (3 x 2 x 64; and 3 x 1 x 128, DDP's own shape), model,
#    optimiser (momentum 0.9, lr 0.05 constant) and evaluation interval,
#    from the same initial weights: round r seeds both sides r + 1, and
#    DDP starts from spirt's model@0 of that seed (bench/start.sh: the
#    file spirt-init -S r+1 writes, checked to be spirt-train's start and
#    to give spirt-eval's test loss in torch), its data order from the
#    seed too, so the medians span seeds, not only timings.  Steps to
#    85% and time per step are reported apart, with their ratios side by
#    side: fewer steps is not a faster step.  Then both sides by local
#    SGD, the algorithm of slow links: spirt-train --every 5 (5 local
#    steps, then the peers average the model's change) against the same
#    algorithm in torch (bench/ddp_train.py DDP_LOCAL=5: local steps,
#    then torch.distributed's model averaging), and against DDP.
# 4. Exchanges every H steps: H = 1, 10, 100 and the per-step exchange,
#    3 peers, the same samples: time per step and the final accuracy.
# 5. The values' hash (four a peer and step: the signed digests): the
#    SHA-256 tree of the digests' version 3 on the build's SHA-256
#    (config.mk's CRYPTO), as spirt_hash computes it, against the whole
#    value's SHA-256 on the build's code (version 2) and libsodium's, and
#    the BLAKE2b-256 of version 1, on a value of the MLP's size; and the
#    value sealed in 64 KiB frames, as an answer's stream is, with the
#    messages' XChaCha20-Poly1305 on the build's code and libsodium's
#    (bench/hash_bench, interleaved, medians).
#
# Environment: PARTS (the sections to run, default "1 2 3 4 5"), REPS (rounds of 1, default 7), STEPS (steps of 2, default
# 30), RACE (rounds of 3, default 2), LOCAL (local steps a round in 3,
# default 5; a divisor of 25, the evaluation interval), HSTEPS (steps of
# 4, default 200), NOCRYPTO (1: part 3 also races, in each round, a copy
# of this tree built with bench/nocrypto.patch, a measurement only, its
# digests' hashes, its AEAD or both turned off: what the crypto costs).
set -eu
cd "$(dirname "$0")/.."
. bench/cpu.sh
. bench/start.sh
PY=/usr/bin/python3
FMNIST=${FMNIST:-/usr/share/datasets/fashion-mnist}
PATH="$PWD:$PATH"
export PATH FMNIST
unset SPIRT_STORE SPIRT_SYNC SPIRT_THREADS OMP_NUM_THREADS OPENBLAS_NUM_THREADS
parts=${PARTS:-1 2 3 4 5}
on() { case " $parts " in *" $1 "*) return 0 ;; esac; return 1; }
reps=${REPS:-7} nsteps=${STEPS:-30} race=${RACE:-2} hsteps=${HSTEPS:-200}
hl=${LOCAL:-5}
# (evaluations at the end of a round only: there the models are averaged)
case $hl in 1 | 5 | 25) ;; *) echo "bench/peer: LOCAL=$hl: 1, 5 or 25" >&2; exit 64 ;; esac

bench_header bench/peer
tmp=$(mktemp -d)
# namespaces (tests/netns.bash), and 10.79.0.0/24 a blackhole in this
# namespace while they exist: removed by netns_teardown at exit, by its
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
echo "1. A 1e7-float aggregate (40 MB record) from peer 1 to peer 2 over veth:"
echo "   warm, 3 gets after the first over one session or connection; cold, a"
echo "   process per fetch; medians of $reps interleaved rounds"
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null 2>&1; then
	echo "   skipped: network namespaces need root and ip(8)"
else
	cd "$tmp"
	spirt-key keygen p1.key >p1.hex
	spirt-key keygen p2.key >p2.hex
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
	# warm: 4 gets over one session, 4 fetches over one connection; ms
	# of the 2nd to 4th, one a line
	swarm() {
		netns_exec 2 env SPIRT_KEY=p2.key SPIRT_ID=p2 SPIRT_RUN=r1 \
		    SPIRT_ALLOW=allow "$OLDPWD/bench/xfer_bench" \
		    "http://p1@$a1:8700" xagg/0/p1 4 | awk 'NR > 1 { print $1 }'
	}
	cwarm() {
		netns_exec 2 curl -sf -w '%{time_total}\n' \
		    -o /dev/null "http://$a1:8701/agg.rec" \
		    -o /dev/null "http://$a1:8701/agg.rec" \
		    -o /dev/null "http://$a1:8701/agg.rec" \
		    -o /dev/null "http://$a1:8701/agg.rec" |
		    awk 'NR > 1 { print 1e3 * $1 }'
	}
	# the same bytes on both sides
	[ "$(sget | md5sum)" = "$(cget | md5sum)" ] ||
		{ echo "bench/peer: the two fetches differ" >&2; exit 1; }
	[ "$(cget | wc -c)" -eq "$(wc -c <www/agg.rec)" ]
	: >sp; : >cu; : >sw; : >cw
	r=0
	while [ "$r" -lt "$reps" ]; do
		swarm >>sw
		cwarm >>cw
		t=$(now); sget >/dev/null; echo $((($(now) - t) / 1000000)) >>sp
		t=$(now); cget >/dev/null; echo $((($(now) - t) / 1000000)) >>cu
		r=$((r + 1))
	done
	b=$(wc -c <www/agg.rec)
	range() { sort -g "$1" | sed -n '1p;$p' | awk '{ printf "%s%.0f", (NR > 1 ? "-" : ""), $1 }'; }
	printf '   %-46s %8s %8s %10s\n' "" ms MB/s range
	for f in "sw:warm: spirt, one session (xfer_bench)" \
	    "cw:warm: curl, one connection" \
	    "sp:cold: spirt-store get, a process each" \
	    "cu:cold: curl, a process each"; do
		awk -v b="$b" -v m="$(med <"${f%%:*}")" -v l="${f#*:}" \
		    -v r="$(range "${f%%:*}")" 'BEGIN {
			printf "   %-46s %8.1f %8.0f %10s\n", l, m, b / 1e3 / m, r }'
	done
	awk -v s="$(med <sw)" -v c="$(med <cw)" -v s2="$(med <sp)" \
	    -v c2="$(med <cu)" 'BEGIN {
		printf "   spirt / curl throughput: warm %.0f%%, cold %.0f%% (target >= 80%%)\n",
		    100 * c / s, 100 * c2 / s2 }'
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
		[ -e "$tmp/p$i.pk" ] || spirt-key keygen "$tmp/p$i.pk" >/dev/null
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

# peers_ms DIR P: the median of the P peers' ms a step, from their logs
peers_ms() {
	for i in $(seq 0 $(($2 - 1))); do
		awk -F'\t' 'END { print 1e3 * $1 / $2 }' "$1/s$i.train-mlp.tsv"
	done | med
}

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
	ms=$(peers_ms "$tmp/sc$np" "$np")
	awk -v p="$np" -v m="$ms" 'BEGIN {
		printf "   %5s %10.1f %10.0f %12.0f\n", p, m, p * 128e3 / m, 128e3 / m }'
	[ "$np" -ne 3 ] || ms3=$ms
	rm -rf "$tmp/sc$np"
done
# what heartbeats cost a step: the 3 peers again with --beat (the
# watcher's pulls, the decision's records: docs/performance.md)
trainp "$tmp/scb" 3 -n 2 -b 64 -o momentum -l 0.05 \
    --schedule constant --steps "$nsteps" --eval-every 100000 --beat 100
ms=$(peers_ms "$tmp/scb" 3)
awk -v m="$ms" -v b="$ms3" 'BEGIN {
	printf "   3 peers with --beat 100: %.1f ms/step, %.2fx the 3 peers without\n",
	    m, m / b }'
rm -rf "$tmp/scb"
fi

# ---- 3. against PyTorch DDP ----
# trainns DIR ARGS...: 3 peers, peer i in namespace i+1, each serving its
# store at its namespace's address, the exchange over HTTP (tokens of one
# group); wait for all
trainns() {
	local d=$1 i pids=
	shift
	mkdir -p "$d"
	: >"$d/peers"
	[ -e "$tmp/ngroup.key" ] ||
		spirt-key keygen -p "$tmp/ngroup.pub" "$tmp/ngroup.key" >/dev/null
	for i in 0 1 2; do
		if [ ! -e "$tmp/n$i.tok" ]; then
			spirt-key keygen "$tmp/n$i.key" >"$tmp/n$i.hex"
			spirt-key invite -o "$tmp/n$i.tok" -g "$tmp/ngroup.key" \
			    -i "p$i" -r r1 "$(cat "$tmp/n$i.hex")"
		fi
		echo "p$i http://$(netns_addr $((i + 1))):8710" >>"$d/peers"
	done
	# (ncpath, ncoff: the NOCRYPTO build's tools and what they turn off)
	for i in 0 1 2; do
		netns_exec $((i + 1)) env PATH="${ncpath:+$ncpath:}$PATH" \
		    ${ncoff:+SPIRT_MEASURE_NOCRYPTO=$ncoff} SPIRT_KEY="$tmp/n$i.key" \
		    SPIRT_TOKEN="$tmp/n$i.tok" SPIRT_GROUP="$tmp/ngroup.pub" \
		    timeout 1800 spirt-train -q -s "$d/s$i" --peers "$d/peers" \
		    --peer "$i" --deadline 120000 --data "$FMNIST" "$@" \
		    >"$d/o$i" 2>"$d/e$i" &
		pids="$pids $!"
	done
	# shellcheck disable=SC2086
	wait $pids || { cat "$d"/e* >&2; return 1; }
}
# ddpns ARGS...: bench/ddp_train.py's 3 ranks, rank r in namespace r+1,
# the rendezvous at namespace 1's address; rank 0's line
ddpns() {
	local r pids=
	for r in 0 1 2; do
		netns_exec $((r + 1)) env DDP_RANK=$r \
		    MASTER_ADDR="$(netns_addr 1)" MASTER_PORT=29611 \
		    GLOO_SOCKET_IFNAME=eth0 timeout 1800 $PY bench/ddp_train.py \
		    "$@" >"$tmp/ddp$r" 2>"$tmp/ddpe$r" &
		pids="$pids $!"
	done
	# shellcheck disable=SC2086
	wait $pids || { cat "$tmp"/ddpe* >&2; return 1; }
	cat "$tmp/ddp0"
}
if on 3; then
echo
echo "3. MLP to 85%, 3 peers x 2 functions x batch 64 (global 384), and 3"
echo "   peers x 1 function x batch 128 (DDP's shape: a process of compute"
echo "   per rank), momentum 0.9 lr 0.05 constant, evaluated every 25 steps;"
echo "   PyTorch DDP (gloo), 3 processes x batch 128, one thread each; all in"
echo "   the same 3 network namespaces (spirt's peers over HTTP; DDP's"
echo "   rendezvous at namespace 1).  Medians of $race interleaved rounds, round"
echo "   r seeded r + 1 on both sides (data order), both starting from spirt's"
echo "   model@0 of seed r + 1 (bench/start.sh checks torch loads it).  Then"
echo "   local SGD on both sides, the model averaged every $hl steps: spirt-train"
echo "   --every $hl (2 x 64 a peer) and torch (3 x 128, DDP_LOCAL=$hl)."
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null 2>&1; then
	echo "   skipped: network namespaces need root and ip(8)"
elif ! $PY -c 'import torch' 2>/dev/null; then
	echo "   skipped: no PyTorch (Debian package python3-torch)"
else
# NOCRYPTO=1: this tree's tracked files copied, bench/nocrypto.patch
# applied, built; its 2 x 64 races with the hashes, the AEAD or both off
# (a shape a line: its options have spaces)
shapes="2:64:sr::
1:128:s1r::
2:64:s5r::--every $hl"
oifs=$IFS nc=
if [ "${NOCRYPTO:-0}" = 1 ]; then
	nc=$tmp/nocrypto
	mkdir "$nc"
	git rev-parse --is-inside-work-tree >/dev/null 2>&1 || {
		echo "bench/peer: NOCRYPTO=1 copies the tree's tracked files: run it in a git checkout" >&2
		exit 1
	}
	{ git ls-files -z | tar --null -T - -cf - | tar -xf - -C "$nc" &&
	    (cd "$nc" && git apply && make -s -j2 all) \
	    <bench/nocrypto.patch; } >"$tmp/nc.log" 2>&1 || {
		cat "$tmp/nc.log" >&2
		echo "bench/peer: NOCRYPTO=1: bench/nocrypto.patch did not apply or build" >&2
		exit 1
	}
	shapes="$shapes
2:64:snh:hash:
2:64:sna:aead:
2:64:snc:all:"
	echo "   NOCRYPTO=1: also spirt 2 x 64 built with bench/nocrypto.patch (a"
	echo "   measurement only): the digests' hashes off, the AEAD off, both off."
fi
netns_setup 3
# (no job notices when teardown kills what runs in the namespaces)
disown -a
: >"$tmp/sr"; : >"$tmp/s1r"; : >"$tmp/s5r"; : >"$tmp/dr"; : >"$tmp/d5r"
: >"$tmp/snh"; : >"$tmp/sna"; : >"$tmp/snc"
r=0
while [ "$r" -lt "$race" ]; do
	# round r: seed r + 1 on both sides (data order), and the same
	# start: spirt-train -S r+1's model@0, loaded by DDP (DDP_INIT)
	start_model mlp:784-256-128-10 $((r + 1)) "$tmp/start.spt"
	# (functions:batch:file:crypto off:options of each spirt shape)
	IFS='
'
	for sh in $shapes; do
		IFS=$oifs
		IFS=: read -r nf nb file ncoff opts <<<"$sh"
		ncpath=
		[ -z "$ncoff" ] || ncpath=$nc
		# shellcheck disable=SC2086
		trainns "$tmp/race" -n "$nf" -b "$nb" \
		    -o momentum -l 0.05 --schedule constant --eval-every 25 \
		    --target 0.85 -e 5 -S $((r + 1)) $opts
		lastline "$tmp/race" >>"$tmp/$file"
		rm -rf "$tmp/race"
	done
	DDP_SEED=$((r + 1)) DDP_INIT=$tmp/start.spt \
	    ddpns 3 128 0.05 25 0.85 5000 |
	    awk '{ print $2, $1, $3 }' >>"$tmp/dr"
	DDP_SEED=$((r + 1)) DDP_INIT=$tmp/start.spt DDP_LOCAL=$hl \
	    ddpns 3 128 0.05 25 0.85 5000 |
	    awk '{ print $2, $1, $3 }' >>"$tmp/d5r"
	r=$((r + 1))
done
netns_teardown
# row FILE LABEL: the medians of a shape's rounds
row() {
	printf '   %-24s %9.2f %6s %9s %8.2f   steps by seed: %s\n' "$2" \
	    "$(awk '{ print $1 }' "$tmp/$1" | med)" \
	    "$(awk '{ print $2 }' "$tmp/$1" | med)" \
	    "$(awk '{ print $3 }' "$tmp/$1" | med)" \
	    "$(awk '{ print 1e3 * $1 / $2 }' "$tmp/$1" | med)" \
	    "$(awk '{ printf "%s%s", (NR > 1 ? " " : ""), $2 }' "$tmp/$1")"
}
# ratio A B NAME: A's medians over B's: steps to 85%, time per step and
# time to 85% (about the product of the two)
ratio() {
	# (the issue's target is against DDP)
	awk -v n="$3" -v a="$(awk '{ print $1 }' "$tmp/$1" | med)" \
	    -v b="$(awk '{ print $1 }' "$tmp/$2" | med)" \
	    -v c="$(awk '{ print 1e3 * $1 / $2 }' "$tmp/$1" | med)" \
	    -v d="$(awk '{ print 1e3 * $1 / $2 }' "$tmp/$2" | med)" \
	    -v e="$(awk '{ print $2 }' "$tmp/$1" | med)" \
	    -v f="$(awk '{ print $2 }' "$tmp/$2" | med)" \
	    -v t="$([ "$2" = dr ] && echo " (target <= 1.0)")" 'BEGIN {
		printf "   %-38s %6.2f %8.2f %8.2f%s\n", n, e / f, c / d,
		    a / b, t }'
}
if [ "$race" -gt 0 ]; then
	printf '   %-24s %9s %6s %9s %8s\n' "" seconds steps accuracy ms/step
	row sr "spirt, 2 x 64 a peer"
	row s1r "spirt, 1 x 128 a peer"
	row dr "PyTorch DDP"
	row s5r "spirt, 2 x 64, --every $hl"
	row d5r "torch local SGD, $hl"
	if [ -n "$nc" ]; then
		row snh "spirt 2 x 64, no hashes"
		row sna "spirt 2 x 64, no AEAD"
		row snc "spirt 2 x 64, neither"
	fi
	echo "   ratios of the medians (time = steps x ms/step, near enough):"
	printf '   %-38s %6s %8s %8s\n' "" steps ms/step time
	ratio sr dr "spirt (2 x 64) / DDP"
	ratio s1r dr "spirt (1 x 128) / DDP"
	ratio s5r dr "spirt (--every $hl) / DDP"
	ratio s5r d5r "spirt (--every $hl) / torch local SGD"
	if [ -n "$nc" ]; then
		ratio snh dr "no hashes / DDP"
		ratio sna dr "no AEAD / DDP"
		ratio snc dr "neither / DDP"
		ratio snc sr "neither / spirt (2 x 64)"
	fi
fi
fi
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

# ---- 5. the values' hash, the messages' AEAD ----
if on 5; then
echo
echo "5. The values' hash and the messages' AEAD, a value of the MLP's size"
echo "   (940,696 bytes), medians of 200 interleaved rounds (a peer and step:"
echo "   four hashes, and four seals or opens, two in its server, two in its"
echo "   exchange)"
printf '   %-46s %8s %8s %10s\n' "" ms GB/s "vs spirt"
bench/hash_bench 940696 200 | awk '
	$1 == "crypto" { c = $2; next }
	$1 == "vhash" || $1 == "aead" { base = $2 }
	{
		if ($1 == "vhash") l = "SHA-256 tree, " c " (spirt_hash)"
		else if ($1 == "aead") l = "XChaCha20-Poly1305, " c " (spirt_aead_seal)"
		else if ($1 == "aead-libsodium") l = "XChaCha20-Poly1305, libsodium"
		else if ($1 == "sha256") l = "SHA-256, " c " (digests v2)"
		else if ($1 == "sha256-libsodium") l = "SHA-256, libsodium"
		else l = "BLAKE2b-256, libsodium (digests v1)"
		printf "   %-46s %8.3f %8.2f %9.2fx\n", l, $2, $3, $2 / base
	}'
grep -qw sha_ni /proc/cpuinfo || echo "   (this CPU has no SHA extensions)"
fi
