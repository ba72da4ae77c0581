#!/bin/bash
# bench/remote.sh - one gradient function through a peer's URL, as a
# function on another host (a FaaS runner, a Slurm node, an ssh host) runs
# it: a cold spirt-grad process in namespace 2 reads model@0 and its shard
# from peer 1's store over veth (spirt-peer serve: handshake, sealed
# answers) and writes its gradient there, against the same cold process on
# the peer's own store.  MLP 784-256-128-10, batch 64, Fashion-MNIST split
# in S shards (the shard is what a function fetches whole): S = 3 (20000
# samples a shard, 15.7 MB) and S = 60 (1000, 0.8 MB).  Medians of REPS
# interleaved rounds (default 7).  docs/scale.md uses these figures.
#   bash bench/remote.sh          (after make all; root, for namespaces)
set -eu
cd "$(dirname "$0")/.."
. bench/cpu.sh
FMNIST=${FMNIST:-/usr/share/datasets/fashion-mnist}
PATH="$PWD:$PATH"
export PATH
unset SPIRT_STORE SPIRT_SYNC SPIRT_THREADS OMP_NUM_THREADS OPENBLAS_NUM_THREADS
reps=${REPS:-7}
bench_header bench/remote
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null 2>&1; then
	echo "skipped: network namespaces need root and ip(8)"
	exit 0
fi
tmp=$(mktemp -d)
# (namespaces at 10.78.0.x, the range a blackhole in this namespace
# meanwhile: tests/netns.bash)
NETNS_NET=10.78.0
. tests/netns.bash
trap 'netns_teardown; rm -rf "$tmp"' EXIT
cd "$tmp"
netns_setup 2

med() {         # med: median of the numbers on stdin
	sort -g | awk '{ v[NR] = $1 } END {
		print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
now() { date +%s%N; }

spirt-key keygen -p group.pub group.key >/dev/null
spirt-key keygen p1.key >p1.hex
spirt-key invite -o p1.tok -g group.key -i p1 -r r1 "$(cat p1.hex)"
spirt-key keygen f1.key >f1.hex
# the function of worker 0 at p1 (its id binds it: docs/protocol.md)
spirt-key invite -o f1.tok -R function -g group.key -i p1.w0 -r r1 \
    "$(cat f1.hex)"
fn="SPIRT_KEY=$tmp/f1.key SPIRT_TOKEN=$tmp/f1.tok SPIRT_GROUP=$tmp/group.pub"

printf '%-8s %-12s %10s %10s %10s %8s\n' shards "shard MB" "local ms" \
    "remote ms" "extra ms" "MB/s"
port=7170
for s in 3 60; do
	st=$tmp/s$s
	spirt-shard -s "$st" -q -n "$s" --seed 1 \
	    "$FMNIST/train-images-idx3-ubyte.gz" \
	    "$FMNIST/train-labels-idx1-ubyte.gz"
	spirt-init -s "$st" -q -m mlp mlp:784-256-128-10
	mkfifo "ready$s"
	ip netns exec "$(netns_name 1)" env SPIRT_KEY=p1.key SPIRT_TOKEN=p1.tok \
	    SPIRT_GROUP=group.pub spirt-peer serve -q -s "$st" \
	    -l "$(netns_addr 1):$port" -F 3 3>"ready$s" 2>/dev/null &
	srv=$!
	read -r addr <"ready$s"
	bytes=$({ spirt-store -s "$st" ls data/train/0/
	    spirt-store -s "$st" ls model/mlp@0; } |
	    awk -F'\t' '{ b += $4 } END { print b }')
	: >l.ms
	: >r.ms
	for r in $(seq 1 "$reps"); do
		t=$(now)
		spirt-grad -s "$st" -q -m mlp -t 0 -w 0 -b 64 -S 1
		echo $(( ($(now) - t) / 1000 )) >>l.ms
		t=$(now)
		netns_exec 2 env $fn spirt-grad -s "http://$addr" -q -m mlp \
		    -t 0 -w 0 -b 64 -S 1
		echo $(( ($(now) - t) / 1000 )) >>r.ms
	done
	l=$(med <l.ms) r=$(med <r.ms)
	awk -v s="$s" -v b="$bytes" -v l="$l" -v r="$r" 'BEGIN {
		printf "%-8s %-12.1f %10.1f %10.1f %10.1f %8.0f\n", s,
		    b / 1e6, l / 1000, r / 1000, (r - l) / 1000,
		    b / ((r - l) / 1e6) / 1e6 }'
	# this size's server ends here, not killed (and reported) at exit
	kill "$srv" 2>/dev/null
	wait "$srv" 2>/dev/null
	port=$((port + 1))
done
echo "(remote: the model and the shard's x, y fetched, the gradient"
echo " written, through the URL; extra = remote - local; MB/s = the bytes"
echo " read / extra)"
