#!/usr/bin/env bats
# 51-metrics: spirt-peer serve's GET /metrics (OpenMetrics text of what
# the server did), to this host only: on loopback, and refused from
# another namespace (tests/netns.bash)

load helper
load netns

ATTACK="$SPIRT_ROOT/tests/unit/test_remote"

teardown() {
	if [ -n "$SRV" ]; then
		kill -TERM "$SRV" 2>/dev/null
		wait "$SRV" 2>/dev/null
	fi
	netns_teardown
	return 0
}

# the group and peer p1, a store with a model at step 0
setup_p1() {
	spirt-peer keygen -p group.pub group.key >/dev/null
	spirt-peer keygen p1.key >p1.hex
	spirt-peer invite -o p1.tok -g group.key -i p1 -r r1 "$(cat p1.hex)"
	spirt-init -q -m m mlp:4-5-3
}

# serve [PREFIX...]: p1's server (PREFIX runs it, e.g. in a namespace)
# on $LISTEN; sets SRV and URL
serve() {
	mkfifo ready
	"$@" timeout -k 10 120 spirt-peer serve -k "$PWD/p1.key" \
	    -T "$PWD/p1.tok" -g "$PWD/group.pub" -s "$PWD/spirt.db" \
	    -l "$LISTEN" -F 3 3>ready 2>srv.log &
	SRV=$!
	read -r -t 30 addr <ready || { cat srv.log; return 1; }
	URL="http://$addr"
}

@test "serve /metrics: requests, refusals by reason, bytes and sessions, to this host" {
	setup_p1
	LISTEN=127.0.0.1:0 serve
	# a member's get, and two refusals
	SPIRT_KEY=p1.key SPIRT_TOKEN=p1.tok SPIRT_GROUP=group.pub \
	    spirt-store -s "$URL" get model/m@0 >m.rec
	run -0 "$ATTACK" raw "$URL" POST /v1/hs garbage
	assert_output '400 ETRUNC'
	run -0 "$ATTACK" raw "$URL" GET /nothing
	assert_output '404 EPROTO'
	run -0 curl -sS --max-time 10 -D hdr "$URL/metrics"
	grep -qi '^content-type: application/openmetrics-text; version=1.0.0' hdr
	assert_line 'spirt_peer_refusals_total{reason="ETRUNC"} 1'
	assert_line 'spirt_peer_refusals_total{reason="EPROTO"} 1'
	assert_line 'spirt_peer_sessions 1'
	[ "${lines[-1]}" = '# EOF' ]
	# the get: a handshake, /v1/id is not asked (pinned), the message:
	# at least the model's bytes out, and two requests answered
	out=$(awk '/^spirt_peer_sent_bytes_total / { print $2 }' <<<"$output")
	[ "$out" -gt "$(wc -c <m.rec)" ]
	in_=$(awk '/^spirt_peer_received_bytes_total / { print $2 }' <<<"$output")
	[ "$in_" -gt 0 ]
	req=$(awk '/^spirt_peer_requests_total / { print $2 }' <<<"$output")
	[ "$req" -ge 2 ]
	# it counts itself: the next one says one more request
	run -0 curl -sS --max-time 10 "$URL/metrics"
	assert_line "spirt_peer_requests_total $((req + 1))"
	# only GET
	run -0 "$ATTACK" raw "$URL" POST /metrics x
	assert_output '404 EPROTO'
}

@test "serve /metrics: refused (403 EROLE) to another host, counted and logged" {
	netns_require
	netns_setup 2
	setup_p1
	LISTEN=$(netns_addr 1):7095
	serve ip netns exec "$(netns_name 1)"
	run -0 netns_exec 2 curl -sS --max-time 10 -o body -w '%{http_code}' \
	    "$URL/metrics"
	assert_output 403
	grep -q '^EROLE: ' body
	# from the server's own host, over its address: not loopback either
	run -0 netns_exec 1 curl -sS --max-time 10 -o body -w '%{http_code}' \
	    "$URL/metrics"
	assert_output 403
	kill -TERM "$SRV"
	wait "$SRV"
	SRV=
	grep -q "refused $(netns_addr 2):[0-9]*: GET /metrics (not from this host): EROLE" srv.log
	grep -q '^spirt-peer: refused EROLE: 2$' srv.log
}
