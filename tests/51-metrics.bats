#!/usr/bin/env bats
# 51-metrics: spirt-peer serve's GET /metrics (OpenMetrics text): what a
# peer's store and server say, to this host only.  Loopback, and two
# network namespaces of the test's own for a client on another host;
# every server has a timeout and is stopped in teardown.

load helper
load netns

teardown() {
	local p
	for p in $SRVS; do
		kill -TERM "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	netns_teardown
	return 0
}

# stores s1, s2 with the same model/m@0 and each its own agg/0, a group
# key, a key and token for p1 and p2
two() {
	"$PYTHON" -c "$PYREC
rng = np.random.default_rng(1)
open('m0.rec', 'wb').write(st.encode(rng.standard_normal(1000).astype(np.float32), name='m:1000', step=0))
for i in (1, 2):
    a = rng.standard_normal(1000).astype(np.float32)
    open('a%d.rec' % i, 'wb').write(st.encode(a, name='m:1000', step=0, samples=32))
"
	spirt-peer keygen -p group.pub group.key >/dev/null
	for i in 1 2; do
		spirt-store -s s$i put model/m@0 m0.rec
		spirt-store -s s$i put agg/0 a$i.rec
		spirt-peer keygen -f p$i.key >p$i.hex
		spirt-peer invite -o p$i.tok -g group.key -i p$i -r r1 \
		    "$(cat p$i.hex)"
	done
}

# hserve I [CMD...]: peer I serves s<I> (through CMD, e.g. netns_exec 1),
# on 127.0.0.1:0 unless LISTEN says; its address in $addr, its log in
# srv<I>.log, its pid added to SRVS
hserve() {
	local i=$1
	shift
	mkfifo ready$i
	"$@" timeout 120 spirt-peer serve -s s$i -k p$i.key -T p$i.tok \
	    -g group.pub -l "${LISTEN:-127.0.0.1:0}" -F 3 3>ready$i \
	    2>srv$i.log &
	SRVS="$SRVS $!"
	read -r -t 30 addr <ready$i || { cat srv$i.log >&2; return 1; }
}

# scrape URL: the figures into m.txt, checked as OpenMetrics text: each
# line a comment of TYPE, UNIT or HELP, or a sample of a name declared
# before it, a number; "# EOF" last
scrape() {
	curl -sS --max-time 10 -D head.txt -o m.txt "$1/metrics"
	grep -qi '^content-type: application/openmetrics-text; version=1.0.0' \
	    head.txt
	[ "$(tail -n 1 m.txt)" = '# EOF' ]
	awk '
	/^# (TYPE|UNIT|HELP) [a-z_]+ / { if ($2 == "TYPE") decl[$3] = 1; next }
	/^# EOF$/ { if (NR != n) bad = 1; next }
	/^[a-z_]+(\{[a-z]+="[^"]*"\})? [0-9][0-9.e+-]*$/ {
		name = $1; sub(/\{.*/, "", name); sub(/_total$/, "", name)
		if (!(name in decl)) bad = 1
		next
	}
	{ bad = 1 }
	END { exit bad }' n="$(wc -l <m.txt)" m.txt
}

# value NAME: the sample named NAME (labels included, as written)
value() {
	awk -v k="$1" 'index($0, k " ") == 1 { print $NF; f = 1 }
	END { exit !f }' m.txt
}

@test "metrics: a peer's figures: its model, its last round, its traffic and refusals" {
	two
	hserve 1
	u1=http://$addr
	hserve 2
	u2=http://$addr
	# before any round: the model, no round, nothing served yet
	scrape "$u1"
	[ "$(value 'spirt_model_step{model="m"}')" = 0 ]
	! grep -q '^spirt_round' m.txt
	[ "$(value spirt_sent_bytes_total)" = 0 ]
	[ "$(value spirt_received_bytes_total)" = 0 ]
	! grep -q '^spirt_refusals_total' m.txt
	# an outsider's message: refused, counted by its reason
	curl -sS --max-time 10 -o /dev/null \
	    -H 'Spirt-Session: 00000000000000000000000000000000' \
	    --data-binary @a1.rec "$u1/v1/msg"
	# a round between the two, over HTTP
	printf 'p1 %s\np2 %s\n' "$u1" "$u2" >peers
	for i in 1 2; do
		SPIRT_KEY=p$i.key SPIRT_TOKEN=p$i.tok SPIRT_GROUP=group.pub \
		    spirt-peer exchange -m m -s s$i -t 0 --deadline 20000 \
		    -P peers >out$i 2>err$i &
		eval "pid$i=\$!"
	done
	wait "$pid1"
	wait "$pid2"
	spirt-update -s s1 -m m -t 0 -r 0.1 -a gagg
	scrape "$u1"
	[ "$(value 'spirt_model_step{model="m"}')" = 1 ]
	[ "$(value 'spirt_round_step{rule="mean"}')" = 0 ]
	[ "$(value 'spirt_round_members{state="used"}')" = 2 ]
	value spirt_round_pull_seconds >/dev/null
	[ "$(value 'spirt_refusals_total{reason="ESESSION"}')" = 1 ]
	# p2 pulled p1's aggregate (4,000 bytes of floats, sealed) from it:
	# more than that went out; handshakes and requests came in
	[ "$(value spirt_sent_bytes_total)" -gt 4000 ]
	[ "$(value spirt_received_bytes_total)" -gt 0 ]
	[ "$(value spirt_requests_total)" -gt 2 ]
	[ "$(value spirt_connections)" -ge 1 ]
	# a scrape is no refusal, and a GET with a body is refused
	run -0 curl -sS --max-time 10 -o /dev/null -w '%{http_code}' \
	    -X GET --data-binary @a1.rec "$u1/metrics"
	assert_output 400
}

@test "metrics: a partitioned round's phases (exchange --parts): each one's time, in the round's record too" {
	two
	hserve 1
	u1=http://$addr
	hserve 2
	u2=http://$addr
	printf 'p1 %s\np2 %s\n' "$u1" "$u2" >peers
	for i in 1 2; do
		SPIRT_KEY=p$i.key SPIRT_TOKEN=p$i.tok SPIRT_GROUP=group.pub \
		    spirt-peer exchange -m m -s s$i -t 0 --deadline 20000 \
		    -P peers --parts >out$i 2>err$i &
		eval "pid$i=\$!"
	done
	wait "$pid1" || { cat err1 >&2; false; }
	wait "$pid2" || { cat err2 >&2; false; }
	run -0 sh -c 'spirt-store -s s1 get gagg/0/round | tr -c "[:print:]\n" " "'
	assert_output --regexp 'phases=cut:[0-9.]+ inputs:[0-9.]+ combine:[0-9.]+ parts:[0-9.]+ check:[0-9.]+'
	scrape "$u1"
	for ph in cut inputs combine parts check; do
		value "spirt_round_phase_seconds{phase=\"$ph\"}" >/dev/null
	done
	[ "$(grep -c '^spirt_round_phase_seconds' m.txt)" -eq 5 ]
	[ "$(value 'spirt_round_members{state="used"}')" = 2 ]
}

@test "metrics: only to this host: another host is refused (403, EADDR), counted" {
	netns_require
	netns_setup 2
	two
	LISTEN=0.0.0.0:0 hserve 1 netns_exec 1
	port=${addr##*:}
	# from host 2: refused, no figure in the answer
	run -0 netns_exec 2 curl -sS --max-time 10 -o body -w '%{http_code}' \
	    "http://$(netns_addr 1):$port/metrics"
	assert_output 403
	grep -qx 'EADDR: .*' body
	! grep -q spirt_ body
	# on host 1, by loopback and by its own address: answered
	run -0 netns_exec 1 curl -sS --max-time 10 -o m.txt -w '%{http_code}' \
	    "http://127.0.0.1:$port/metrics"
	assert_output 200
	run -0 netns_exec 1 curl -sS --max-time 10 -o m.txt -w '%{http_code}' \
	    "http://$(netns_addr 1):$port/metrics"
	assert_output 200
	[ "$(value 'spirt_refusals_total{reason="EADDR"}')" = 1 ]
	grep -q "refused $(netns_addr 2):[0-9]*: GET /metrics: EADDR" srv1.log
}
