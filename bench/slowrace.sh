#!/bin/bash
# bench/slowrace.sh - issue 36's race over slow links: P = 8 peers, each
# in a network namespace of its own (tests/netns.bash), every host's link
# shaped by netns_link (default 100 Mbit/s with 10 ms each way on each
# host's link: a 20 ms round trip between two hosts; then 1 Gbit/s with
# 0.5 ms, a 1 ms round trip; netem, or where the kernel has none the
# harness's switch in user space, tests/wire), the MLP to 85% test
# accuracy, against PyTorch over the same links:
#   bash bench/slowrace.sh   (after make all; root, for the namespaces;
#                             /usr/bin/python3 with torch)
#
# Like for like (as bench/peer.sh part 3): every side has P processes of
# one thread, one a namespace, batch B a process (spirt-train -n 1 -b B
# --peers, a global batch of P x B; bench/ddp_train.py P B), SGD with
# momentum 0.9 at a constant lr, evaluated every EVAL steps (a multiple
# of H) on the test set, stopping at the first evaluation at 85% or
# more; and both start from spirt's model@0 of the seed (bench/start.sh
# checks torch loads it: the same test loss), the data order from the
# seed too.  Rows:
#   spirt all, spirt parts      spirt-train --exchange all / parts, the
#                               gradient exchanged every step
#   spirt all/parts --every H   H local steps, then the model change
#                               exchanged and averaged (local SGD)
#   DDP                         DistributedDataParallel, gloo: an
#                               allreduce of the gradient every step
#   torch local SGD             DDP_LOCAL=H: H local steps, then an
#                               allreduce of the parameters
# Reported: steps to 85%, seconds to 85% (training only: neither side
# counts its evaluations), ms a step, the accuracy reached, and the
# ratios against DDP (issue 36's target: spirt's best <= 0.5 x DDP).
#
# 8 processes of training on this machine's CPUs, and, on the wire, a
# process that forwards every frame: the CPU is part of the limit, not
# only the links; the header gives the CPUs and the load.
#
# Environment: PEERS (default 8), B (default 64), LR (default 0.05),
# EVAL (default 20), H (default 10), SEEDS (default "1": a round a seed,
# interleaved rows), LINKS (netns_link specs, ";" between, default "rate
# 100mbit delay 10ms;rate 1gbit delay 0.5ms"), ROWS (default "all parts
# all10 parts10 ddp local"), EPOCHS (spirt-train -e, default 20: a bound,
# the target ends the run first).
set -eu
cd "$(dirname "$0")/.."
. bench/cpu.sh
. bench/start.sh
PY=/usr/bin/python3
FMNIST=${FMNIST:-/usr/share/datasets/fashion-mnist}
PATH="$PWD:$PATH"
export PATH FMNIST
unset SPIRT_STORE SPIRT_SYNC SPIRT_THREADS OMP_NUM_THREADS OPENBLAS_NUM_THREADS
p=${PEERS:-8} b=${B:-64} lr=${LR:-0.05} ev=${EVAL:-20} h=${H:-10}
seeds=${SEEDS:-1} epochs=${EPOCHS:-20}
links=${LINKS:-rate 100mbit delay 10ms;rate 1gbit delay 0.5ms}
rows=${ROWS:-all parts all10 parts10 ddp local}
[ $((ev % h)) -eq 0 ] || {
	echo "bench/slowrace: EVAL=$ev: a multiple of H=$h (models are averaged there)" >&2
	exit 64
}

bench_header bench/slowrace
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null 2>&1; then
	echo "bench/slowrace: skipped: network namespaces need root and ip(8)"
	exit 0
fi
$PY -c 'import torch' 2>/dev/null || {
	echo "bench/slowrace: skipped: no PyTorch (Debian package python3-torch)"
	exit 0
}
[ -r "$FMNIST/train-images-idx3-ubyte.gz" ] || {
	echo "bench/slowrace: no Fashion-MNIST in $FMNIST" >&2
	exit 66
}
tmp=$(mktemp -d)
NETNS_NET=10.80.0
# (the wire where the kernel has no netem: these benches shape delays)
NETNS_WIRE=${NETNS_WIRE:-auto}
. tests/netns.bash
trap 'netns_teardown; rm -rf "$tmp"' EXIT

med() {         # med: median of the numbers on stdin ("-" if none)
	sort -g | awk '{ v[NR] = $1 } END {
		if (NR == 0) print "-"
		else print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

spirt-key keygen -p "$tmp/group.pub" "$tmp/group.key" >/dev/null
: >"$tmp/peers"
for i in $(seq 1 "$p"); do
	spirt-key keygen "$tmp/p$i.key" >"$tmp/p$i.hex"
	spirt-key invite -o "$tmp/p$i.tok" -g "$tmp/group.key" -i "p$i" \
	    -r r1 "$(cat "$tmp/p$i.hex")"
	echo "p$i http://$(netns_addr "$i"):8720" >>"$tmp/peers"
done

# spirt_run SEED ARGS...: the P peers from scratch (stores sharded by
# each, seed SEED), "seconds steps accuracy" of peer 1's log's last row
spirt_run() {
	local seed=$1 i pids=
	shift
	rm -rf "$tmp/r"
	mkdir "$tmp/r"
	for i in $(seq 1 "$p"); do
		netns_exec "$i" env SPIRT_KEY="$tmp/p$i.key" \
		    SPIRT_TOKEN="$tmp/p$i.tok" SPIRT_GROUP="$tmp/group.pub" \
		    timeout 3600 spirt-train -q -s "$tmp/r/s$i" -n 1 -b "$b" \
		    --peers "$tmp/peers" --peer $((i - 1)) --data "$FMNIST" \
		    -o momentum -l "$lr" --schedule constant --eval-every "$ev" \
		    --target 0.85 -e "$epochs" -S "$seed" --deadline 120000 \
		    "$@" >"$tmp/r/o$i" 2>"$tmp/r/e$i" &
		pids="$pids $!"
	done
	# shellcheck disable=SC2086
	wait $pids || { tail -n 5 "$tmp"/r/e* >&2; return 1; }
	awk -F'\t' 'END { print $1, $2, $6 }' "$tmp/r/s1.train-mlp.tsv"
}

# ddp_run SEED LOCAL: bench/ddp_train.py's P ranks, rank r in namespace
# r + 1, the rendezvous at host 1; "seconds steps accuracy"
ddp_run() {
	local r pids=
	for r in $(seq 0 $((p - 1))); do
		netns_exec $((r + 1)) env DDP_RANK="$r" DDP_SEED="$1" \
		    DDP_INIT="$tmp/start.spt" DDP_LOCAL="$2" \
		    MASTER_ADDR="$(netns_addr 1)" MASTER_PORT=29613 \
		    GLOO_SOCKET_IFNAME=eth0 timeout 3600 $PY bench/ddp_train.py \
		    "$p" "$b" "$lr" "$ev" 0.85 100000 >"$tmp/ddp$r" \
		    2>"$tmp/ddpe$r" &
		pids="$pids $!"
	done
	# shellcheck disable=SC2086
	wait $pids || { tail -n 5 "$tmp"/ddpe* >&2; return 1; }
	awk '{ print $2, $1, $3 }' "$tmp/ddp0"
}

label() {
	case $1 in
	all) echo "spirt, all-to-all" ;;
	parts) echo "spirt, partitioned" ;;
	all10) echo "spirt, all-to-all, --every $h" ;;
	parts10) echo "spirt, partitioned, --every $h" ;;
	ddp) echo "PyTorch DDP (gloo)" ;;
	local) echo "torch local SGD, $h" ;;
	esac
}

echo
echo "The MLP to 85%: $p peers x 1 x batch $b (global $((p * b))), momentum 0.9,"
echo "lr $lr constant, evaluated every $ev steps; seeds: $seeds"
IFS=';' read -r -a specs <<<"$links"
for spec in "${specs[@]}"; do
	netns_setup "$p"
	disown -a
	for i in $(seq 1 "$p"); do
		netns_link "$i" "$spec"
	done
	how=bridge
	netns_wired && how="the wire (tests/wire: no netem here)"
	! netns_wired && netns_netem >/dev/null && how=netem
	echo
	echo "links: $spec on every host ($how); load average" \
	    "$(cut -d' ' -f1-3 /proc/loadavg)"
	for row in $rows; do : >"$tmp/$row"; done
	for seed in $seeds; do
		start_model mlp:784-256-128-10 "$seed" "$tmp/start.spt"
		for row in $rows; do
			case $row in
			all) spirt_run "$seed" --exchange all ;;
			parts) spirt_run "$seed" --exchange parts ;;
			all10) spirt_run "$seed" --exchange all --every "$h" ;;
			parts10) spirt_run "$seed" --exchange parts --every "$h" ;;
			ddp) ddp_run "$seed" 0 ;;
			local) ddp_run "$seed" "$h" ;;
			esac >>"$tmp/$row"
			echo "   $(label "$row"), seed $seed: $(tail -n 1 "$tmp/$row")" \
			    "(s steps accuracy; load $(cut -d' ' -f1 /proc/loadavg))"
		done
	done
	printf '   %-34s %6s %9s %8s %8s %8s %8s\n' "" steps seconds ms/step \
	    accuracy "t/DDP" "t/local"
	for row in $rows; do
		awk -v n="$(label "$row")" \
		    -v s="$(awk '{ print $2 }' "$tmp/$row" | med)" \
		    -v t="$(awk '{ print $1 }' "$tmp/$row" | med)" \
		    -v a="$(awk '{ print $3 }' "$tmp/$row" | med)" \
		    -v d="$(awk '{ print $1 }' "$tmp/ddp" 2>/dev/null | med)" \
		    -v l="$(awk '{ print $1 }' "$tmp/local" 2>/dev/null | med)" \
		    'function r(x, y) { return (y + 0 > 0) ? sprintf("%.2f", x / y) : "-" }
		    BEGIN { printf "   %-34s %6s %9.1f %8.1f %8.4f %8s %8s\n", n, s,
			t, 1e3 * t / s, a, r(t, d), r(t, l) }'
	done
	netns_teardown
done
