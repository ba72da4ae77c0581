#!/usr/bin/env bats
# 53-netns-train: three peers, each in a network namespace of its own with
# its own store and 2 functions, train the MLP over HTTP with keys and
# tokens of one group; a fourth namespace runs functions through a peer's
# URL and knocks on every endpoint without a key.  Root only; bounded; the
# namespaces and everything in them go in teardown, or by the harness's
# trap and reaper when the test is killed (tests/netns.bash).

load helper
load netns

STEPS=200
PORT=7070

teardown() {
	netns_teardown
	return 0
}

# peer I's environment: its key, its token, the group's public key
as_peer() {
	printf 'SPIRT_KEY=%s SPIRT_TOKEN=%s SPIRT_GROUP=%s' "$PWD/p$1.key" \
	    "$PWD/p$1.tok" "$PWD/group.pub"
}

# wait_listen I PORT: a listener on host I, at most 120 s (the drivers
# start their servers once the model is initialised)
wait_listen() {
	local k
	for k in $(seq 1 1200); do
		netns_exec "$1" ss -Hltn "sport = :$2" 2>/dev/null | grep -q . &&
			return 0
		sleep 0.1
	done
	echo "nothing listens on port $2 of host $1" >&2
	return 1
}

# knock URL PATH METHOD [BODY]: the HTTP status of one request without
# a key, from host 4, and the reason the peer gives
knock() {
	local b=()
	[ -z "$4" ] || b=(--data-binary "$4")
	netns_exec 4 curl -sS --max-time 10 -o knock.body -w '%{http_code}' \
	    -X "$3" "${b[@]}" "$1$2"
	printf ' %s\n' "$(head -n 1 knock.body | cut -d: -f1)"
}

# digests STORE: "step peer modelhash" of every digest/<t>/<peer> in STORE,
# read from the store's own dump (the signed digest record, its model
# hash at bytes 152..184 of the digest)
digests() {
	# (the exchange writes digests in the scratch environment, as the
	# aggregates they sign; spirt-store persist moves them to the main
	# one: both are read, each key once)
	{ mdb_dump "$1"; [ ! -d "$1/scratch" ] || mdb_dump "$1/scratch"; } |
	    "$PYTHON" -c '
import sys
lines = sys.stdin.read().split("\n")
seen = set()
for h in [j for j, l in enumerate(lines) if l == "HEADER=END"]:
    i = h + 1
    while lines[i].startswith(" "):
        k = bytes.fromhex(lines[i].strip()).decode()
        v = bytes.fromhex(lines[i + 1].strip())
        i += 2
        if k.startswith("digest/") and k not in seen:
            seen.add(k)
            d = v[v.find(b"SPDG"):]
            _, t, p = k.split("/")
            print(t, p, d[152:184].hex())
'
}

@test "netns: three peers in three namespaces train the MLP over HTTP: one model at every step; remote functions; refusals" {
	netns_require
	[ -r "$FMNIST/train-images-idx3-ubyte.gz" ] ||
		skip "no Fashion-MNIST (Debian package dataset-fashion-mnist)"
	netns_setup 4
	# the group key, offline; a token per peer and one for the function
	netns_peers 3 "$PORT"
	# functions of peer 1's workers 0 and 1 (their ids bind them), and
	# an attacker holding a valid token of worker 1's
	for f in h0:p1.w0 h1:p1.w1 a1:p1.w1; do
		spirt-peer keygen "${f%%:*}.key" >"${f%%:*}.hex"
		spirt-peer invite -o "${f%%:*}.tok" -R function -g group.key \
		    -i "${f#*:}" -r r1 "$(cat "${f%%:*}.hex")"
	done
	# the data, sharded once over 3 peers x 2 functions (as each driver
	# would), in each peer's store
	spirt-shard -s base -q -n 6 --seed 1 \
	    "$FMNIST/train-images-idx3-ubyte.gz" \
	    "$FMNIST/train-labels-idx1-ubyte.gz"
	spirt-shard -s base -q -d test "$FMNIST/t10k-images-idx3-ubyte.gz" \
	    "$FMNIST/t10k-labels-idx1-ubyte.gz"
	for i in 1 2 3; do
		cp -r base s$i
	done
	# kernels: the best this CPU has (AVX-512 where it has it), AVX2, the
	# baseline: the same bits by design
	isa=(x "" avx2 base)
	grep -qw avx512f /proc/cpuinfo && isa[1]=avx512
	for i in 1 2 3; do
		netns_exec $i env $(as_peer $i) SPIRT_ISA=${isa[$i]} \
		    timeout 600 spirt-train -q -s "$PWD/s$i" -n 2 -b 16 \
		    --peers "$PWD/peers" --peer $((i - 1)) --steps $STEPS \
		    --eval-every $STEPS --deadline 60000 --keep-digests \
		    >o$i 2>e$i &
		eval "pid$i=\$!"
	done

	# while they train: no key at all, from host 4, at every endpoint of
	# peer 1's server
	wait_listen 1 $PORT
	url=http://$(netns_addr 1):$PORT
	run -0 knock "$url" /v1/id GET
	assert_output '200 VERSION=1'
	run -0 knock "$url" /v1/hs POST garbage
	assert_output '400 ETRUNC'
	run -0 knock "$url" /v1/msg POST garbage
	assert_output '401 ESESSION'
	run -0 knock "$url" /v1/hs GET
	assert_output '404 EPROTO'
	run -0 knock "$url" /v1/msg GET
	assert_output '404 EPROTO'
	run -0 knock "$url" / GET
	assert_output '404 EPROTO'
	run -0 knock "$url" /v1/msg DELETE
	assert_output '404 EPROTO'

	wait $pid1 && wait $pid2 && wait $pid3
	# one model everywhere at the end
	h=$(spirt-store -s s1 get model/mlp@$STEPS | md5sum)
	[ "$(spirt-store -s s2 get model/mlp@$STEPS | md5sum)" = "$h" ]
	[ "$(spirt-store -s s3 get model/mlp@$STEPS | md5sum)" = "$h" ]
	# and at every step: each store holds every peer's signed digest of
	# every step, and all of them name one model@t per step
	for i in 1 2 3; do
		digests s$i >dg$i
	done
	[ "$(wc -l <dg1)" -eq $((3 * STEPS)) ]
	cmp dg1 dg2
	cmp dg1 dg3
	[ "$(cut -d' ' -f1 dg1 | sort -u | wc -l)" -eq $STEPS ]
	[ "$(cut -d' ' -f1,3 dg1 | sort -u | wc -l)" -eq $STEPS ]
	# the hash in the digests is the model's: model@(STEPS-1) is still
	# there; its hash, computed here by tests/vhash.py (Python's hashlib,
	# from docs/protocol.md), is what every peer signed
	last=$((STEPS - 1))
	spirt-store -s s1 get -f model/mlp@$last >last.rec
	want=$("$PYTHON" "$BATS_TEST_DIRNAME/vhash.py" last.rec)
	[ "$(awk -v t=$last '$1 == t { print $3 }' dg1 | sort -u)" = "$want" ]
	# each server served the others, and logged and counted the knocks
	for i in 1 2 3; do
		grep -q "^spirt-peer: listening on $(netns_addr $i):$PORT as p$i (run r1)$" e$i
		grep -q '^spirt-peer: stopped: [1-9][0-9]* served, ' e$i
	done
	grep -q '^spirt-peer: stopped: [1-9][0-9]* served, 0 refused$' e2
	grep -q "^spirt-peer: refused $(netns_addr 4):[0-9]*: handshake: ETRUNC$" e1
	grep -q "^spirt-peer: refused $(netns_addr 4):[0-9]*: message without a session: ESESSION$" e1
	grep -q '^spirt-peer: refused EPROTO: 4$' e1
	grep -q '^spirt-peer: refused ESESSION: 1$' e1
	grep -q '^spirt-peer: refused ETRUNC: 1$' e1
	grep -q '^spirt-peer: stopped: [1-9][0-9]* served, 6 refused$' e1
	# and training went on: it learnt
	run -0 awk -F'\t' 'END { exit !($6 > 0.6) }' s1.train-mlp.tsv

	# remote functions: host 4 computes through peer 1's URL, as members
	# p1.w0 and p1.w1 in role function
	mkfifo ready
	# ($!: the server itself, as ip netns exec and env exec it, not a
	# subshell; teardown ends it with the namespace if the test fails)
	ip netns exec "$(netns_name 1)" env $(as_peer 1) spirt-peer serve \
	    -s "$PWD/s1" -l "$(netns_addr 1):$((PORT + 1))" -F 3 \
	    3>ready 2>srv.log &
	srv=$!
	read -r -t 60 addr <ready
	url=http://$addr
	fn() {
		printf 'SPIRT_KEY=%s SPIRT_TOKEN=%s SPIRT_GROUP=%s' \
		    "$PWD/$1.key" "$PWD/$1.tok" "$PWD/group.pub"
	}
	for w in 0 1; do
		netns_exec 4 env $(fn h$w) SPIRT_ISA=base spirt-grad -s "$url" \
		    -m mlp -t $STEPS -w $w -b 16
	done
	# the attacker, from its own namespace: another worker's slot, a
	# worker the assignment does not have, a future and a past step,
	# another value for the slot taken: each refused, nothing written
	spirt-grad -s s1 -m mlp -t $STEPS -w 0 -b 16 -o local0.rec
	past=$(spirt-store -s s1 get -f grad/$((STEPS - 1))/1 | md5sum)
	for k in $STEPS/0 $STEPS/7 $((STEPS + 5))/1 $((STEPS - 1))/1 \
	    $STEPS/1; do
		run netns_exec 4 env $(fn a1) spirt-store -s "$url" put \
		    "grad/$k" local0.rec
		[ "$status" -eq 65 ] || [ "$status" -eq 73 ] ||
			fail "grad/$k: exit $status: $output"
	done
	run -0 spirt-store -s s1 ls grad/$STEPS/
	assert_equal "$(printf '%s\n' "${lines[@]}" | cut -f1)" \
	    "$(printf 'grad/%s/0\ngrad/%s/1' $STEPS $STEPS)"
	run -0 spirt-store -s s1 ls grad/$((STEPS + 5))/
	assert_output ''
	[ "$(spirt-store -s s1 get -f grad/$((STEPS - 1))/1 | md5sum)" = \
	    "$past" ]
	# the same bytes as computed in the peer's own store, and the
	# step's aggregate is the honest workers' alone
	for w in 0 1; do
		spirt-grad -s s1 -m mlp -t $STEPS -w $w -b 16 -o local$w.rec
		spirt-store -s s1 get -f grad/$STEPS/$w >remote$w.rec
		cmp local$w.rec remote$w.rec
	done
	spirt-agg -q -s s1 -t $STEPS -o agg-store.rec
	spirt-agg -q -o agg-local.rec local0.rec local1.rec
	cmp agg-store.rec agg-local.rec
	# a function reads models and data, and nothing of the peers
	run -0 netns_exec 4 env $(fn h0) spirt-store -s "$url" ls model/
	assert_output --partial "model/mlp@$STEPS"
	run -65 netns_exec 4 env $(fn h0) spirt-store -s "$url" get -f \
	    digest/$last/p1
	kill -TERM $srv
	wait $srv
	grep -q '^spirt-peer: stopped: [1-9][0-9]* served, 6 refused$' srv.log
	grep -q "^spirt-peer: refused $(netns_addr 4):[0-9]*: p1.w0: get digest/$last/p1 (function): EROLE$" srv.log
	for l in "$STEPS/0 (function): EADDR" "$STEPS/7 (function): EADDR" \
	    "$((STEPS + 5))/1 (function): ESTEP" \
	    "$((STEPS - 1))/1 (function): ESTEP" \
	    "$STEPS/1 (function): EEXIST"; do
		grep -q "^spirt-peer: refused $(netns_addr 4):[0-9]*: p1.w1: put grad/$l\$" srv.log ||
			fail "no log line '$l': $(cat srv.log)"
	done
}
