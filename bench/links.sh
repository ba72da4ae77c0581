#!/bin/bash
# bench/links.sh - the all-to-all and the partitioned exchange over slow
# links: P = 2, 4 and 8 peers, each in a network namespace of its own
# (tests/netns.bash), every host's link to the hub shaped by netns_link:
# 100 Mbit/s with a 20 ms round trip, and 1 Gbit/s with 1 ms (netem;
# where the kernel has no netem tests/wire, the harness's switch in user
# space, and the header says so; with NETNS_WIRE=0 there the rate alone,
# by tbf).  Each exchange (spirt-train --exchange all, parts) on the
# same links, one after the other.
#   bash bench/links.sh   (after make all; root, for the namespaces)
#
# Each run: P peers train the MLP 784-256-128-10 (spirt-train --peers,
# over HTTP with tokens of one group, 1 function x batch 64 a peer, the
# exchange each step) for STEPS steps.  Reported, per run:
#   - bytes per peer per round, in and out: the hub's veth counters (ip -s
#     link: what went to and came from each host; on the wire its own
#     counts of the same, Ethernet frames) over the run, all of
#     them (aggregates, digests, handshakes, HTTP), divided by P and by
#     the rounds (STEPS); and as a multiple of S, the aggregate record's
#     bytes (all-to-all: (P - 1) S in and as many out; parts: about
#     2 S (P - 1) / P); in/S over the whole run, st.in/S and st.out/S
#     over its steady rounds (from when every peer logged step WARM to
#     when every peer logged step STEPS - 10: no start nor end in them),
#     and over those rounds the servers' own counts (GET /metrics of
#     each peer, from its own host: ans/S, the sealed answers' bytes;
#     rest/S, the veth bytes less answers and requests: HTTP and what
#     TCP/IP headers a GSO frame shows; req, requests served);
#   - step time: the peers' median seconds a step (their logs);
#   - round time: the step time less that of one peer alone (same
#     functions and batch, no --peers), run just before: what the
#     exchange adds to a step.
#
# Environment: STEPS (default 20), PEERS (default "2 4 8"), LINKS (the
# netns_link specs, ";" between, default "rate 100mbit delay 10ms;rate
# 1gbit delay 0.5ms"), MODES (default "all parts"; parts0: parts without
# checkers, SPIRT_CHECK=0, so that parts against parts0 is what the check
# of owners costs, spirt-peer(1) --check; partsall: every part checked
# each round, SPIRT_CHECK_PARTS=P, --check-parts), WARM (default 3: the
# steady rounds are those after every peer logged WARM steps).
set -eu
cd "$(dirname "$0")/.."
. bench/cpu.sh
PY=/usr/bin/python3
FMNIST=${FMNIST:-/usr/share/datasets/fashion-mnist}
PATH="$PWD:$PATH"
export PATH FMNIST
unset SPIRT_STORE SPIRT_SYNC SPIRT_THREADS OMP_NUM_THREADS OPENBLAS_NUM_THREADS
steps=${STEPS:-40}
warm=${WARM:-10}
peers=${PEERS:-2 4 8}
links=${LINKS:-rate 100mbit delay 10ms;rate 1gbit delay 0.5ms}
modes=${MODES:-all parts}

bench_header bench/links
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null 2>&1 ||
    ! command -v tc >/dev/null 2>&1; then
	echo "bench/links: skipped: network namespaces need root, ip(8), tc(8)"
	exit 0
fi
[ -r "$FMNIST/train-images-idx3-ubyte.gz" ] || {
	echo "bench/links: no Fashion-MNIST in $FMNIST" >&2
	exit 66
}
tmp=$(mktemp -d)
NETNS_NET=10.78.0
# (the wire where the kernel has no netem: these benches shape delays)
NETNS_WIRE=${NETNS_WIRE:-auto}
. tests/netns.bash
trap 'netns_teardown; rm -rf "$tmp"' EXIT
if [ "${NETNS_WIRE:-}" = 0 ] && ! why=$(netns_netem); then
	echo "   no netem here: the rate alone (tbf), no delay ($why)"
	links=$(printf '%s\n' "$links" | sed 's/ delay [^ ;]*//g; s/ loss [^ ;]*//g')
elif [ "${NETNS_WIRE:-}" = 1 ] || ! netns_netem >/dev/null; then
	echo "   no netem here (or NETNS_WIRE=1): the links are tests/wire's, a switch"
	echo "   in user space (rate, delay and loss); NETNS_WIRE=0: tbf, no delay"
fi

med() {         # med: median of the numbers on stdin ("-" if none)
	sort -g | awk '{ v[NR] = $1 } END {
		if (NR == 0) print "-"
		else print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
# counters: "host rx tx" of every host's link as the hub sees it (rx:
# what host i sent, tx: what it received), all read at once: the hub's
# veths, or on the wire (tests/wire) its bytes from and to each host
counters() {
	if netns_wired; then
		netns_wire stat &&
		    awk -v n="$1" '$1 ~ /^[0-9]+$/ && $1 <= n {
			for (i = 2; i < NF; i++)
				if ($i == "bytes") print $1, $(i + 1), $(i + 2)
		    }' "/run/spirt-netns/${NETNS_PREFIX}w/state" | sort
		return
	fi
	ip -n "$(netns_name h)" -s -j link show | "$PY" -c '
import json, sys
n = int(sys.argv[1])
for l in json.load(sys.stdin):
    if l["ifname"][1:].isdigit() and l["ifname"][0] == "v" and \
            1 <= int(l["ifname"][1:]) <= n:
        s = l["stats64"]
        print(l["ifname"][1:], s["rx"]["bytes"], s["tx"]["bytes"])' "$1" |
	    sort
}
# rows P: the step the slowest of the P peers has logged last (its log
# has a row every 10 steps)
rows() {
	local i n m=
	for i in $(seq 1 "$1"); do
		n=$(awk -F'\t' 'NR > 1 { s = $2 } END { print s + 0 }' \
		    "$tmp/s$i.train-mlp.tsv" 2>/dev/null) || n=0
		[ -n "$m" ] && [ "$m" -le "$n" ] || m=$n
	done
	echo "$m"
}
# served P: "requests body-bytes-in answer-bytes-out" summed over the P
# peers' servers (GET /metrics, from each host to itself)
served() {
	local i
	for i in $(seq 1 "$1"); do
		netns_exec "$i" curl -s --max-time 5 \
		    "http://$(netns_addr "$i"):7090/metrics" || :
	done | awk '$1 == "spirt_requests_total" { q += $2 }
		$1 == "spirt_received_bytes_total" { i += $2 }
		$1 == "spirt_sent_bytes_total" { o += $2 }
		END { printf "%d %d %d\n", q, i, o }'
}
# steady P: the counters once every peer logged step WARM (cw, the step
# in rw, the servers' counts in sw), and again at step STEPS - 10 (ce, re,
# se): the rounds between, with no start (keys, sessions, the model and
# shards) nor end in them
steady() {
	local r
	while r=$(rows "$1"); [ "$r" -lt "$warm" ]; do sleep 0.02; done
	counters "$1" >"$tmp/cw"
	served "$1" >"$tmp/sw"
	echo "$r" >"$tmp/rw"
	while r=$(rows "$1"); [ "$r" -lt $((steps - 10)) ]; do sleep 0.02; done
	counters "$1" >"$tmp/ce"
	served "$1" >"$tmp/se"
	echo "$r" >"$tmp/re"
}

# shard DIR N: the data in N shards (P peers x 1 function), as each
# driver would shard it, into a store every peer starts from a copy of
shard() {
	[ -d "$1" ] || spirt-shard -s "$1" -q -n "$2" --seed 1 \
	    "$FMNIST/train-images-idx3-ubyte.gz" \
	    "$FMNIST/train-labels-idx1-ubyte.gz"
}
maxp=0
for p in $peers; do [ "$p" -le "$maxp" ] || maxp=$p; done
spirt-key keygen -p "$tmp/group.pub" "$tmp/group.key" >/dev/null
for i in $(seq 1 "$maxp"); do
	spirt-key keygen "$tmp/p$i.key" >"$tmp/p$i.hex"
	spirt-key invite -o "$tmp/p$i.tok" -g "$tmp/group.key" -i "p$i" \
	    -r r1 "$(cat "$tmp/p$i.hex")"
done

# one peer alone, no exchange: the step the rounds are added to
shard "$tmp/solo" 1
timeout 1800 spirt-train -q -s "$tmp/solo" -n 1 -b 64 --steps "$steps" \
    --eval-every 100000 >/dev/null 2>"$tmp/solo.err" ||
	{ cat "$tmp/solo.err" >&2; exit 1; }
solo=$(awk -F'\t' 'END { print 1e3 * $1 / $2 }' "$tmp/solo.train-mlp.tsv")
spirt-store -s "$tmp/solo" get -f "model/mlp@$steps" >"$tmp/m.rec"
S=$(wc -c <"$tmp/m.rec")

echo
echo "The exchange (spirt-train --exchange), the MLP (S = $S bytes an"
echo "aggregate record), 1 x 64 a peer, $steps steps; one peer alone:"
echo "$(printf '%.1f' "$solo") ms a step"
printf '   %-28s %-8s %3s %8s %8s %7s %7s %7s %7s %7s %6s %4s %9s %9s\n' \
    link mode P "MB in" "MB out" "in/S" "st.in/S" "st.out/S" "ans/S" \
    "rest/S" "req" rds "ms/step" "ms/round"
IFS=';' read -r -a specs <<<"$links"
for spec in "${specs[@]}"; do
	for p in $peers; do
		for mode in $modes; do
			shard "$tmp/base$p" "$p"
			netns_setup "$p"
			disown -a
			: >"$tmp/peers"
			for i in $(seq 1 "$p"); do
				echo "p$i http://$(netns_addr "$i"):7090" >>"$tmp/peers"
				netns_link "$i" "$spec"
				rm -rf "$tmp/s$i" "$tmp/s$i".*
				cp -r "$tmp/base$p" "$tmp/s$i"
			done
			counters "$p" >"$tmp/c0"
			rm -f "$tmp"/s[0-9]*.train-mlp.tsv "$tmp/cw" "$tmp/ce" \
			    "$tmp/sw" "$tmp/se"
			steady "$p" &
			spid=$!
			pids="" ck="" ckp="" xm=parts
			case $mode in
			all) xm=all ;;
			parts0) ck=0 ;;
			partsall) ckp=$p ;;
			esac
			for i in $(seq 1 "$p"); do
				netns_exec "$i" env SPIRT_KEY="$tmp/p$i.key" \
				    SPIRT_CHECK="$ck" SPIRT_CHECK_PARTS="$ckp" \
				    SPIRT_TOKEN="$tmp/p$i.tok" \
				    SPIRT_GROUP="$tmp/group.pub" \
				    timeout 1800 spirt-train -q -s "$tmp/s$i" -n 1 -b 64 \
				    --peers "$tmp/peers" --peer $((i - 1)) \
				    --steps "$steps" --eval-every 10 \
				    --exchange "$xm" \
				    --deadline 120000 >/dev/null 2>"$tmp/e$i" &
				pids="$pids $!"
			done
			# shellcheck disable=SC2086
			wait $pids || { cat "$tmp"/e* >&2; exit 1; }
			counters "$p" >"$tmp/c1"
			kill "$spid" 2>/dev/null || :
			wait "$spid" 2>/dev/null || :
			ms=$(for i in $(seq 1 "$p"); do
				awk -F'\t' 'END { print 1e3 * $1 / $2 }' \
				    "$tmp/s$i.train-mlp.tsv"
			done | med)
			# the steady rounds (none if the run ended first)
			[ -s "$tmp/ce" ] || cp "$tmp/c1" "$tmp/ce"
			[ -s "$tmp/cw" ] || cp "$tmp/c0" "$tmp/cw"
			[ -s "$tmp/re" ] || echo "$steps" >"$tmp/re"
			[ -s "$tmp/rw" ] || echo 0 >"$tmp/rw"
			[ -s "$tmp/sw" ] || echo 0 0 0 >"$tmp/sw"
			[ -s "$tmp/se" ] || echo 0 0 0 >"$tmp/se"
			read -r q0 bi0 bo0 <"$tmp/sw"
			read -r q1 bi1 bo1 <"$tmp/se"
			rounds=$(($(cat "$tmp/re") - $(cat "$tmp/rw")))
			join "$tmp/c0" "$tmp/c1" | join - "$tmp/cw" |
			    join - "$tmp/ce" | awk -v p="$p" -v n="$steps" \
			    -v s="$S" -v ms="$ms" -v solo="$solo" -v l="$spec" \
			    -v m="$mode" -v r="$rounds" -v q=$((q1 - q0)) \
			    -v bi=$((bi1 - bi0)) -v bo=$((bo1 - bo0)) '
				{ out += $4 - $2; in_ += $5 - $3
				  sti += $9 - $7; sto += $8 - $6 }
				END {
					i = in_ / p / n; o = out / p / n
					si = sti / p / r; so = sto / p / r
					# (the rest: HTTP and TCP/IP)
					printf "   %-28s %-8s %3d %8.2f %8.2f %7.2f %7.2f %7.2f %7.3f %7.3f %6.1f %4d %9.1f %9.1f\n",
					    l, m, p, i / 1e6, o / 1e6, i / s, si / s,
					    so / s, bo / p / r / s,
					    (sti - bo - bi) / p / r / s, q / p / r, r,
					    ms, ms - solo }'
			netns_teardown
		done
	done
done
echo "   (in/S: all-to-all moves P - 1 aggregates in a round, a peer; the"
echo "   partitioned exchange 2 (P - 1) / P: 1, 1.5, 1.75 at 2, 4, 8)"
