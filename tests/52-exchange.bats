#!/usr/bin/env bats
# 52-exchange: peers on one machine: the network-namespace harness
# (tests/netns.bash), then spirt-peer exchange between them

load helper
load netns

teardown() {
	netns_teardown
	# what a child script made, if the test failed before it was gone
	local f
	for f in "$BATS_TEST_TMPDIR"/prefix.*; do
		[ -e "$f" ] && netns_clean "$(cat "$f")" 3
	done
	return 0
}

# child SIG: a script that makes 3 hosts, serves on host 1, says "ready"
# and waits; the test kills it with SIG and looks at what it left
child() {
	cat >child.sh <<CHILD
. "$SPIRT_ROOT/tests/netns.bash"
netns_setup 3 || exit 1
echo "\$NETNS_PREFIX" >prefix.\$\$
netns_exec 1 "$PYTHON" -m http.server --bind "\$(netns_addr 1)" 8000 \
    >/dev/null 2>&1 &
netns_wait_port 1 8000 || exit 1
echo ready
sleep 60 &
wait
CHILD
	bash child.sh >child.out 2>child.err &
	pid=$!
	local k
	for k in $(seq 1 200); do
		grep -q ready child.out 2>/dev/null && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	grep -q ready child.out || { cat child.err >&2; return 1; }
	prefix=$(cat "prefix.$pid")
	[ -n "$(netns_left "$prefix")" ]
	# the server runs inside host 1
	[ -n "$(ip netns pids "${prefix}1")" ]
	srv=$(ip netns pids "${prefix}1")
	kill "-$1" "$pid"
	wait "$pid" || :
	# bounded: the trap (TERM) or the reaper (KILL) removes everything
	for k in $(seq 1 100); do
		[ -z "$(netns_left "$prefix")" ] && break
		sleep 0.1
	done
	[ -z "$(netns_left "$prefix")" ]
	for k in $(seq 1 50); do
		kill -0 $srv 2>/dev/null || break
		sleep 0.1
	done
	! kill -0 $srv 2>/dev/null
}

@test "netns: three hosts, TCP across them, none from outside" {
	netns_require
	netns_setup 3
	[ "$(netns_left "$NETNS_PREFIX" | sort | tr '\n' ' ')" = \
	    "$(printf '%s ' "${NETNS_PREFIX}1" "${NETNS_PREFIX}2" "${NETNS_PREFIX}3" "${NETNS_PREFIX}h")" ]
	run -0 netns_exec 2 ip -4 -o addr show eth0
	assert_output --partial "inet $(netns_addr 2)/24"
	echo "across the bridge $RANDOM" >page
	netns_exec 1 "$PYTHON" -m http.server --bind "$(netns_addr 1)" 8000 \
	    >/dev/null 2>&1 &
	netns_wait_port 1 8000
	run -0 netns_exec 2 curl -sS --max-time 10 "http://$(netns_addr 1):8000/page"
	assert_output "$(cat page)"
	run -0 netns_exec 3 curl -sS --max-time 10 "http://$(netns_addr 1):8000/page"
	assert_output "$(cat page)"
	# the test's own namespace has no route there (unless it happens to
	# be on that network itself)
	if ! ip -4 route get "$(netns_addr 1)" 2>/dev/null | grep -q ' dev '; then
		run curl -sS --max-time 3 "http://$(netns_addr 1):8000/page"
		[ "$status" -ne 0 ]
	fi
	# nothing was added to the test's own namespace
	! ip -o link show | grep -q "$NETNS_PREFIX"
	srv=$(ip netns pids "${NETNS_PREFIX}1")
	[ -n "$srv" ]
	prefix=$NETNS_PREFIX
	netns_teardown
	[ -z "$(netns_left "$prefix")" ]
	! kill -0 $srv 2>/dev/null
	# twice is fine
	netns_teardown
}

@test "netns: a test killed by SIGTERM leaves no namespace or process" {
	netns_require
	child TERM
}

@test "netns: a test killed by SIGKILL leaves no namespace or process (reaper)" {
	netns_require
	child KILL
}
