#!/usr/bin/env bats
# 53-links: slow links between namespaces (tests/netns.bash's netns_link:
# netem's rate, delay and loss on a host's veth, or a tbf for the rate
# alone where the kernel has no netem): the shaping is applied, measured
# against the same transfer unshaped in the same test, and three peers
# still train to one model over 20 ms RTT with 0.1% loss.  Root only;
# bounded; the namespaces go in teardown (or by the harness's reaper).

load helper
load netns

teardown() {
	netns_teardown
	return 0
}

# fetch I URL: seconds to connect and in all, "connect total", from host I
fetch() {
	netns_exec "$1" curl -sS --max-time 60 -o /dev/null \
	    -w '%{time_connect} %{time_total}\n' "$2"
}

# serve_blob BYTES: a file of BYTES served by host 1 over HTTP, its URL
# in url, fetched once from host 2 (warm)
serve_blob() {
	head -c "$1" /dev/urandom >blob
	netns_exec 1 "$PYTHON" -m http.server --bind "$(netns_addr 1)" \
	    -d "$PWD" 8731 >/dev/null 2>&1 &
	netns_wait_port 1 8731
	url=http://$(netns_addr 1):8731/blob
	fetch 2 "$url" >/dev/null
}

@test "netns_link: a rate is on the link: the same transfer is slower shaped than not, and fast again unshaped" {
	netns_require
	netns_setup 2
	serve_blob 4000000
	read -r c0 t0 < <(fetch 2 "$url")
	# 4 MB at 20 Mbit/s: 1.6 s at least, both ends shaped
	run -0 netns_link 1 "rate 20mbit"
	run -0 netns_link 2 "rate 20mbit"
	read -r c1 t1 < <(fetch 2 "$url")
	awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b >= 1.4 && b >= 4 * a) }' ||
		fail "4 MB: ${t0} s unshaped, ${t1} s at 20 Mbit/s"
	run -0 tc -n "$(netns_name h)" qdisc show dev v1
	assert_output --regexp '(netem|tbf) .*rate 20Mbit'
	run -0 tc -n "$(netns_name 2)" qdisc show dev eth0
	assert_output --regexp '(netem|tbf) .*rate 20Mbit'
	# removed: as fast as before again
	run -0 netns_link 1 none
	run -0 netns_link 2 none
	read -r c2 t2 < <(fetch 2 "$url")
	awk -v a="$t2" -v b="$t1" 'BEGIN { exit !(4 * a <= b) }' ||
		fail "4 MB: ${t1} s at 20 Mbit/s, ${t2} s unshaped again"
}

@test "netns_link: a delay is on the link (netem): a connect takes the round trip asked" {
	netns_require
	netns_setup 2
	if ! why=$(netns_netem); then
		# refused, and said why, where the kernel has no netem
		run -1 netns_link 1 "rate 100mbit delay 10ms"
		assert_output --partial "netns_link: host 1: delay 10ms: tc qdisc ... netem:"
		run -0 tc -n "$(netns_name h)" qdisc show dev v1
		refute_output --partial tbf
		skip "$why"
	fi
	serve_blob 100000
	read -r c0 t0 < <(fetch 2 "$url")
	# 10 ms at each receiver: a TCP connect (one round trip) 20 ms
	run -0 netns_link 1 "delay 10ms"
	run -0 netns_link 2 "delay 10ms"
	read -r c3 t3 < <(fetch 2 "$url")
	awk -v a="$c0" -v b="$c3" 'BEGIN { exit !(b >= 0.019 && b - a >= 0.015) }' ||
		fail "connect: ${c0} s unshaped, ${c3} s over 20 ms RTT"
}

@test "netns_link: three peers train the MLP over 20 ms RTT with 0.1% loss at 100 Mbit/s: one model at every step" {
	netns_require
	[ -r "$FMNIST/train-images-idx3-ubyte.gz" ] ||
		skip "no Fashion-MNIST (Debian package dataset-fashion-mnist)"
	# (SPIRT_TEST_LINK: another shaping, to try the test where the
	# kernel has no netem: "rate 100mbit")
	link=${SPIRT_TEST_LINK:-rate 100mbit delay 10ms loss 0.1%}
	if [ -z "${SPIRT_TEST_LINK:-}" ] && ! why=$(netns_netem); then
		skip "$why"
	fi
	steps=12
	netns_setup 3
	netns_peers 3 7080
	for i in 1 2 3; do
		run -0 netns_link $i "$link"
	done
	spirt-shard -s base -q -n 3 --seed 1 \
	    "$FMNIST/train-images-idx3-ubyte.gz" \
	    "$FMNIST/train-labels-idx1-ubyte.gz"
	for i in 1 2 3; do
		cp -r base s$i
	done
	for i in 1 2 3; do
		netns_exec $i env SPIRT_KEY="$PWD/p$i.key" \
		    SPIRT_TOKEN="$PWD/p$i.tok" SPIRT_GROUP="$PWD/group.pub" \
		    timeout 600 spirt-train -q -s "$PWD/s$i" -n 1 -b 32 \
		    --peers "$PWD/peers" --peer $((i - 1)) --steps $steps \
		    --eval-every 100000 --deadline 60000 --keep-digests \
		    >o$i 2>e$i &
		eval "pid$i=\$!"
	done
	wait $pid1 && wait $pid2 && wait $pid3 || {
		cat e1 e2 e3 >&2
		fail "a peer failed over: $link"
	}
	h=$(spirt-store -s s1 get model/mlp@$steps | md5sum)
	[ "$(spirt-store -s s2 get model/mlp@$steps | md5sum)" = "$h" ]
	[ "$(spirt-store -s s3 get model/mlp@$steps | md5sum)" = "$h" ]
	# and at every step: every peer's signed digests name one model
	# (spirt-peer verify), from every store
	for i in 1 2 3; do
		run -0 spirt-peer verify -s s$i -m mlp -g group.pub
		assert_line --index $steps \
		    "steps 0..$((steps - 1)) of run r1: the chain holds, $steps steps: p1 p2 p3"
	done
	# the links were shaped while they trained
	run -0 tc -n "$(netns_name h)" qdisc show dev v3
	assert_output --regexp '(netem|tbf) .*rate 100Mbit'
	if [ -z "${SPIRT_TEST_LINK:-}" ]; then
		assert_output --regexp 'netem .*delay 10(\.0)?ms'
		assert_output --regexp 'netem .*loss 0\.1%'
	fi
}
