#!/usr/bin/env bats
# 53-slowloris: a serving peer under a slowloris from four addresses at
# once, more connections than its --max-conns, each dribbling a byte a
# second (tests/slowloris.py), while an honest member gets the model
# through its URL from a fifth.  Root only; bounded (the attack lasts
# 30 s); the namespaces and everything in them go in teardown, or by the
# harness's trap and reaper when the test is killed (tests/netns.bash).

load helper
load netns

PORT=7080

teardown() {
	netns_teardown
	return 0
}

@test "slowloris: four hosts hold more than --max-conns connections, dribbling; an honest member's gets are answered all along" {
	netns_require
	netns_setup 6
	group_keys
	"$PYTHON" -c "$PYREC
rng = np.random.default_rng(1)
open('m0.rec', 'wb').write(st.encode(rng.standard_normal(1 << 18).astype(np.float32), name='m:262144', step=0))
"
	spirt-store -s s1 put model/m@0 m0.rec
	# 32 connections at most, 8 from one address, idle ones closed
	# after 5 s: four attackers of 12 connections each ask for 48
	mkfifo ready
	ip netns exec "$(netns_name 1)" env SPIRT_KEY="$PWD/p1.key" \
	    SPIRT_TOKEN="$PWD/p1.tok" SPIRT_GROUP="$PWD/group.pub" \
	    spirt-peer serve -s "$PWD/s1" -l "$(netns_addr 1):$PORT" -F 3 \
	    --max-conns 32 --per-ip 8 --conn-timeout 5 3>ready 2>srv.log &
	srv=$!
	read -r -t 60 addr <ready
	for i in 3 4 5 6; do
		netns_exec $i "$PYTHON" "$BATS_TEST_DIRNAME/slowloris.py" \
		    "$(netns_addr 1)" $PORT 12 30 >att$i 2>&1 &
		eval "att$i=\$!"
	done
	# the attack under way: every slot the attackers may take is taken
	sleep 3
	# the honest member, from host 2: a get of the model every 2 s, each
	# answered in full within 5 s (without the shedding of the slowest
	# connection, the first waited for the attack's end, 27 s)
	fn="SPIRT_KEY=$PWD/f1.key SPIRT_TOKEN=$PWD/f1.tok SPIRT_GROUP=$PWD/group.pub"
	for k in $(seq 1 10); do
		t0=$(date +%s%N)
		netns_exec 2 env $fn SPIRT_TIMEOUT=5s spirt-store \
		    -s "http://$addr" get -f model/m@0 >got.rec
		echo "$((($(date +%s%N) - t0) / 1000000))" >>honest
		cmp got.rec m0.rec
		sleep 2
	done
	# ... all of them well within the bound
	[ "$(sort -n honest | tail -n 1)" -lt 5000 ]
	for i in 3 4 5 6; do
		eval "wait \$att$i"
	done
	# the attackers: each had connections over its address's 8 refused
	# at once and the ones it held shed, none held for long (a
	# connection still held at the end may be one the kernel accepted
	# and the server did not yet: not counted)
	for i in 3 4 5 6; do
		read -r _ r c _ l <att$i
		r=${r#refused=} c=${c#cut=} l=${l#longest=}
		[ "$r" -ge 1 ] && [ "$c" -ge 1 ] && [ "${l%.*}" -lt 15 ] ||
			fail "attacker $i: $(cat att$i)"
	done
	kill -TERM $srv
	wait $srv
	# the server logged and counted every connection it shed: the
	# attackers', never the member's
	net=${NETNS_NET//./\\.}
	grep -q "^spirt-peer: refused $net\.[3-6]:[0-9]*: slowest of 32 connections: EBUSY$" \
	    srv.log
	run ! grep -q "^spirt-peer: refused $(netns_addr 2):" srv.log
	run -0 sed -n 's/^spirt-peer: refused EBUSY: \([0-9]*\)$/\1/p' srv.log
	[ "$output" -ge 10 ]
	# 3 requests a get (the id, a handshake, the message)
	run -0 sed -n 's/^spirt-peer: stopped: \([0-9]*\) served, [0-9]* refused$/\1/p' srv.log
	[ "$output" -ge 30 ]
}
