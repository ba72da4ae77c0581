#!/usr/bin/env bats
# 51-serve: spirt-peer serve, and every tool's -s http://host:port
# (loopback only; every server has a timeout and is stopped in teardown)

load helper

ATTACK="$SPIRT_ROOT/tests/unit/test_remote"

# the group, the peer p1 that serves, a second peer p2, a function f1
# (f1.key, f1.tok) whose id p1.w0-1 binds it to p1's workers 0 and 1
members() {
	members_of p1:peer:p1 p2:peer:p2 f1:function:p1.w0-1
}

# p1's store: a 4-feature, 3-class set in 2 shards, an MLP at step 0
mkstore() {
	csv40
	spirt-shard -q -n 2 train.csv
	spirt-init -m m mlp:4-5-3
}

# start p1's server (extra options in "$@"); sets SRV and URL, logs to
# srv.log; its address comes through a fifo, so no sleep
serve() {
	mkfifo ready
	timeout -k 10 120 spirt-peer serve -k p1.key -T p1.tok -g group.pub \
	    -l 127.0.0.1:0 -F 3 "$@" 3>ready 2>srv.log &
	SRV=$!
	read -r -t 30 addr <ready || { cat srv.log; return 1; }
	URL="http://$addr"
}

# stop the server: SIGTERM, exit 0
stop() {
	kill -TERM "$SRV"
	wait "$SRV"
	local rc=$?
	SRV=
	return $rc
}

# act as member $1
as() {
	export SPIRT_KEY="$1.key" SPIRT_TOKEN="$1.tok" SPIRT_GROUP=group.pub
}

teardown() {
	if [ -n "$SRV" ]; then
		kill -TERM "$SRV" 2>/dev/null
		wait "$SRV" 2>/dev/null
	fi
	if [ -n "$MUTE" ]; then
		kill "$MUTE" 2>/dev/null
		wait "$MUTE" 2>/dev/null
	fi
	return 0
}

@test "serve: a function computes its gradient through -s URL, same bytes as local" {
	members
	mkstore
	spirt-grad -m m -t 0 -w 1 -b 8 -o local.rec
	serve
	as f1
	run -0 --separate-stderr spirt-grad -s "$URL" -m m -t 0 -w 1 -b 8
	[ -z "$stderr" ]
	spirt-store get -f grad/0/1 >/dev/null
	spirt-store get -f grad/0/1 >remote.rec
	cmp local.rec remote.rec
	# a retry with the same bytes is fine; it never replaces another's
	run -0 spirt-grad -s "$URL" -m m -t 0 -w 1 -b 8
	stop
	grep -q '^spirt-peer: listening on 127.0.0.1:[0-9]* as p1 (run r1)$' \
	    srv.log
	grep -q '^spirt-peer: stopped: [0-9]* served, 0 refused$' srv.log
}

@test "serve: spirt-store -s URL ls, get, put, rm by role" {
	members
	mkstore
	spirt-store get -f model/m@0 >m.rec
	serve
	before=$(store_digest "$SPIRT_STORE")
	as f1
	run -0 --separate-stderr spirt-store -s "$URL" ls model/
	assert_output "$(SPIRT_STORE= spirt-store -s "$SPIRT_STORE" ls model/)"
	spirt-store -s "$URL" get -f model/m@0 >/dev/null
	spirt-store -s "$URL" get -f model/m@0 >got.rec
	cmp m.rec got.rec
	# a function may not list everything, write a model, or delete
	run -65 --separate-stderr spirt-store -s "$URL" ls
	assert_equal "$stderr" \
	    "spirt-store: $URL: $URL: member in the wrong role"
	run -65 --separate-stderr spirt-store -s "$URL" put model/m@1 m.rec
	assert_equal "$stderr" \
	    "spirt-store: model/m@1: $URL: member in the wrong role"
	run -65 spirt-store -s "$URL" rm model/m@0
	run -65 spirt-store -s "$URL" get -f agg/0
	[ "$(store_digest "$SPIRT_STORE")" = "$before" ]
	# a peer reads anything, writes only beat/
	as p2
	run -0 spirt-store -s "$URL" ls
	assert_line --partial 'data/train/assign'
	assert_line --partial 'model/m@0'
	run -65 spirt-store -s "$URL" put model/m@1 m.rec
	run -0 spirt-store -s "$URL" put beat/p2 m.rec
	run -0 spirt-store show beat/p2
	stop
	grep -q "^spirt-peer: refused 127.0.0.1:[0-9]*: p1.w0-1: put model/m@1 (function): EROLE$" srv.log
	grep -q "^spirt-peer: refused 127.0.0.1:[0-9]*: p1.w0-1: del model/m@0 (function): EROLE$" srv.log
	grep -q "^spirt-peer: refused 127.0.0.1:[0-9]*: p2: put model/m@1 (peer): EROLE$" srv.log
	grep -q '^spirt-peer: refused EROLE: 5$' srv.log
}

@test "serve: a missing key and a bad record exit as they do locally" {
	members
	mkstore
	printf 'model/bad@0\nnot a record at all\n' | mdb_load -T "$SPIRT_STORE"
	serve
	as f1
	for cmd in "spirt-store -s S get -f model/none@0" \
	    "spirt-store -s S show model/none@0" \
	    "spirt-store -s S show model/bad@0" \
	    "spirt-grad -s S -m none -t 0 -w 0 -b 8" \
	    "spirt-grad -s S -m bad -t 0 -w 0 -b 8 -o -" \
	    "spirt-grad -s S -m m -t 3 -w 0 -b 8 -o -" \
	    "spirt-eval -s S -m bad -t 0 -d train"; do
		set +e
		${cmd//S/$SPIRT_STORE} >/dev/null 2>&1
		want=$?
		${cmd//S/$URL} >/dev/null 2>remote.err
		got=$?
		set -e
		[ "$want" -eq 65 ] || [ "$want" -eq 66 ] ||
			fail "$cmd: local exit $want"
		[ "$got" -eq "$want" ] ||
			fail "$cmd: remote exit $got, local $want: $(cat remote.err)"
	done
}

@test "serve: an unreachable peer is 69, one that does not answer in time 75" {
	members
	as f1
	# a port nobody listens on: bind one, close it, use it
	port=$("$PYTHON" -c 'import socket; s = socket.socket()
s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	run -69 --separate-stderr spirt-grad -s "http://127.0.0.1:$port" \
	    -m m -t 0 -w 0 -b 8
	assert_regex "$stderr" "^spirt-grad: model/m@0: http://127.0.0.1:$port: .*Couldn't connect to server$"
	run -69 spirt-store -s "http://127.0.0.1:$port" ls model/
	# a server that accepts and never answers
	mute_start
	port=$MUTE_PORT
	SPIRT_TIMEOUT=300ms run -75 --separate-stderr spirt-grad \
	    -s "http://127.0.0.1:$port" -m m -t 0 -w 0 -b 8
	assert_regex "$stderr" "^spirt-grad: model/m@0: http://127.0.0.1:$port: no answer within 300 ms"
	SPIRT_TIMEOUT=300ms run -75 spirt-store -s "http://127.0.0.1:$port" \
	    get -f model/m@0
}

@test "serve: URL and credential errors are named" {
	members
	as f1
	run -64 --separate-stderr spirt-store -s http://127.0.0.1:1/x ls
	assert_equal "$stderr" \
	    'spirt-store: http://127.0.0.1:1/x: malformed store URL'
	run -69 spirt-store -s https://127.0.0.1:1 ls
	SPIRT_KEY= run -64 --separate-stderr spirt-store -s http://127.0.0.1:1 ls
	assert_equal "$stderr" 'spirt-store: http://127.0.0.1:1: SPIRT_KEY: not set (the identity key file a remote store needs)'
	chmod 640 f1.key
	run -66 --separate-stderr spirt-store -s http://127.0.0.1:1 ls
	assert_equal "$stderr" 'spirt-store: http://127.0.0.1:1: SPIRT_KEY: f1.key: secret key file readable by group or others (chmod 600)'
	chmod 600 f1.key
	SPIRT_GROUP= run -64 spirt-store -s http://127.0.0.1:1 ls
	SPIRT_TIMEOUT=never run -64 spirt-store -s http://127.0.0.1:1 ls
	# in-store aggregation and updates stay on the peer that owns it
	run -64 --separate-stderr spirt-agg -s http://127.0.0.1:1 -t 0
	assert_equal "$stderr" 'spirt-agg: http://127.0.0.1:1: aggregation into a store runs on the peer that owns it (or give -o file)'
	run -64 --separate-stderr spirt-update -s http://127.0.0.1:1 -m m -t 0
	assert_equal "$stderr" 'spirt-update: http://127.0.0.1:1: updates run on the peer that owns the store'
}

@test "serve: a credential error names the option given, else the variable" {
	members
	mkstore
	run -66 --separate-stderr spirt-peer serve -k p1.key -T p1.tok \
	    -g nope.pub -l 127.0.0.1:0
	assert_equal "$stderr" \
	    'spirt-peer: -g: nope.pub: No such file or directory'
	SPIRT_GROUP=nope.pub run -66 --separate-stderr spirt-peer serve \
	    -k p1.key -T p1.tok -l 127.0.0.1:0
	assert_equal "$stderr" \
	    'spirt-peer: SPIRT_GROUP: nope.pub: No such file or directory'
	run -65 --separate-stderr spirt-peer serve -k p1.key -T p2.tok \
	    -g group.pub -l 127.0.0.1:0
	assert_equal "$stderr" \
	    "spirt-peer: -T: p2.tok: a token for another key than -k's"
	SPIRT_KEY=p1.key run -65 --separate-stderr spirt-peer serve \
	    -T p2.tok -g group.pub -l 127.0.0.1:0
	assert_equal "$stderr" \
	    "spirt-peer: -T: p2.tok: a token for another key than SPIRT_KEY's"
	run -66 --separate-stderr spirt-peer serve -k p1.key -i p1 -r r1 \
	    -a nope -l 127.0.0.1:0
	assert_equal "$stderr" 'spirt-peer: -a: nope: No such file or directory'
}

@test "serve: each refusal is answered, counted and logged, and serving goes on" {
	members
	mkstore
	# an outsider: a key and a token of another group
	spirt-peer keygen -p other.pub other.key >/dev/null
	spirt-peer keygen x1.key >x1.hex
	spirt-peer invite -o x1.tok -R function -g other.key -i p1.w0 -r r1 \
	    "$(cat x1.hex)"
	# a member whose token has expired
	spirt-peer keygen f2.key >f2.hex
	"$ATTACK" mint group.key r1 f2 function "$(cat f2.hex)" >f2.tok
	serve -M 64k
	# unauthenticated requests to every endpoint
	run -0 "$ATTACK" raw "$URL" POST /v1/hs garbage
	assert_output '400 ETRUNC'
	run -0 "$ATTACK" raw "$URL" POST /v1/msg garbage
	assert_output '401 ESESSION'
	run -0 "$ATTACK" raw "$URL" GET /v1/msg
	assert_output '404 EPROTO'
	run -0 "$ATTACK" raw "$URL" GET /v1/hs
	assert_output '404 EPROTO'
	run -0 "$ATTACK" raw "$URL" GET /
	assert_output '404 EPROTO'
	# /v1/id says who the peer is, and nothing else
	run -0 "$ATTACK" raw "$URL" GET /v1/id
	assert_output '200 OK'
	run -0 "$PYTHON" -c "import urllib.request as u
print(u.urlopen('$URL/v1/id').read().decode(), end='')"
	assert_output "$(printf 'VERSION=1\nTYPE=spirt-peer\nID=p1\nRUN=r1\nEND')"
	# a member's crafted messages
	as f1
	run -0 "$ATTACK" attack "$URL" get
	assert_output 'OK'
	for a in hs-replay:EREPLAY msg-replay:EREPLAY tamper:EMAC \
	    step:ESTEP addr:EADDR session:ESESSION; do
		run -0 "$ATTACK" attack "$URL" "${a%%:*}"
		[ "$output" = "${a#*:}" ] || fail "$a: got $output"
	done
	# too large: refused before it is read
	head -c 70000 /dev/zero >big
	run -0 "$PYTHON" -c "import urllib.request as u, urllib.error as e
try: u.urlopen(u.Request('$URL/v1/msg', data=open('big', 'rb').read()))
except e.HTTPError as x: print(x.code, x.read().decode(), end='')"
	assert_output '413 ETOOBIG: value too large for the peer'
	# an unknown key, an expired token, a function writing a model
	as x1
	run -65 --separate-stderr spirt-store -s "$URL" get -f model/m@0
	[[ "$stderr" == *'unknown key (not a member)' ]]
	as f2
	run -65 --separate-stderr spirt-store -s "$URL" get -f model/m@0
	[[ "$stderr" == *'member token expired' ]]
	as f1
	spirt-store get -f model/m@0 >m.rec
	run -65 spirt-store -s "$URL" put model/m@1 m.rec
	# and the peer still serves
	run -0 spirt-grad -s "$URL" -m m -t 0 -w 0 -b 8
	run -0 spirt-store show grad/0/0
	stop
	for l in "handshake: ETRUNC" "message without a session: ESESSION" \
	    "GET /v1/msg: EPROTO" "GET /v1/hs: EPROTO" "GET /: EPROTO" \
	    "handshake: EREPLAY" "p1.w0-1: model/m@0: EREPLAY" \
	    "p1.w0-1: model/m@0: EMAC" "p1.w0-1: model/m@0: ESTEP" \
	    "handshake: EADDR" \
	    "message: ESESSION" "POST /v1/msg: ETOOBIG" \
	    "handshake: EUNKNOWNKEY" "handshake: EEXPIRED" \
	    "p1.w0-1: put model/m@1 (function): EROLE"; do
		grep -q "^spirt-peer: refused 127.0.0.1:[0-9]*: $l\$" srv.log ||
			fail "no log line '$l': $(cat srv.log)"
	done
	for c in ETRUNC:1 ESESSION:2 EPROTO:3 EREPLAY:2 EMAC:1 ESTEP:1 \
	    EADDR:1 ETOOBIG:1 EUNKNOWNKEY:1 EEXPIRED:1 EROLE:1; do
		grep -q "^spirt-peer: refused ${c%%:*}: ${c#*:}\$" srv.log ||
			fail "count ${c}: $(grep 'refused E' srv.log)"
	done
	grep -q '^spirt-peer: stopped: [0-9]* served, 15 refused$' srv.log
}

@test "serve: options and their exit codes" {
	members
	mkstore
	run -64 spirt-peer serve extra
	run -64 spirt-peer serve -e 1h
	run -64 spirt-peer keygen -l 127.0.0.1:0 k.key
	run -64 --separate-stderr spirt-peer serve -k p1.key -T p1.tok \
	    -g group.pub -l nowhere
	assert_equal "$stderr" 'spirt-peer: nowhere: not addr:port (a numeric address and port)'
	run -64 --separate-stderr spirt-peer serve -k p1.key -T p1.tok \
	    -g group.pub -M 0
	run -64 spirt-peer serve -k p1.key -T p1.tok -g group.pub -s http://x:1
	run -66 spirt-peer serve -k nokey -T p1.tok -g group.pub
	run -66 spirt-peer serve -k p1.key -T p1.tok -g group.pub -s none.db
	# an address in use: 69
	serve
	run -69 --separate-stderr timeout 30 spirt-peer serve -k p1.key \
	    -T p1.tok -g group.pub -l "${URL#http://}"
	[[ "$stderr" == *"${URL#http://}: cannot listen: Address already in use" ]]
	# --retry MS: in use for all of MS, the same 69, after MS
	run -64 spirt-peer serve -k p1.key -T p1.tok -g group.pub --retry x
	run -64 spirt-peer serve -k p1.key -T p1.tok -g group.pub \
	    --retry 86400001
	t0=$(date +%s%N)
	run -69 --separate-stderr timeout 30 spirt-peer serve -k p1.key \
	    -T p1.tok -g group.pub -l "${URL#http://}" --retry 1000
	[ $(($(date +%s%N) - t0)) -ge 1000000000 ]
	[[ "$stderr" == *"${URL#http://}: cannot listen: Address already in use" ]]
	# and freed within MS: it listens there
	mkfifo ready3
	timeout 60 spirt-peer serve -q -k p1.key -T p1.tok -g group.pub \
	    -l "${URL#http://}" -F 3 --retry 20000 3>ready3 2>srv3.log &
	SRV3=$!
	sleep 0.5
	kill -0 "$SRV3"
	stop
	serve_ready=
	read -r -t 30 serve_ready <ready3
	[ "$serve_ready" = "${URL#http://}" ]
	kill -TERM "$SRV3"
	wait "$SRV3"
	# a signal while it tries again: it stops at once, 69
	rm ready
	serve
	timeout 60 spirt-peer serve -q -k p1.key -T p1.tok -g group.pub \
	    -l "${URL#http://}" --retry 60000 2>srv4.log &
	SRV3=$!
	sleep 0.5
	kill -TERM "$SRV3"
	rc=0
	wait "$SRV3" || rc=$?
	[ "$rc" -eq 69 ]
	[[ "$(cat srv4.log)" == *"cannot listen: Address already in use" ]]
	stop
	rm ready
	serve
	# an allowlist instead of tokens: id and run from -i and -r
	printf 'VERSION=1\nTYPE=spirt-allowlist\nMEMBER=%s peer p1\nMEMBER=%s function f1\nEND\n' \
	    "$(cat p1.hex)" "$(cat f1.hex)" >allow
	stop
	mkfifo ready2
	timeout 60 spirt-peer serve -q -k p1.key -a allow -i p1 -r r1 \
	    -l 127.0.0.1:0 -F 3 3>ready2 2>srv2.log &
	SRV=$!
	read -r -t 30 addr <ready2
	SPIRT_KEY=f1.key SPIRT_ID=f1 SPIRT_RUN=r1 SPIRT_ALLOW=allow \
	    run -0 spirt-store -s "http://$addr" ls model/
	assert_output --partial 'model/m@0'
	stop
	# -q: no log at all
	[ ! -s srv2.log ]
}

@test "serve: a function writes only the gradient slots its id binds, of the step computed (EADDR, ESTEP, EEXIST), logged and counted" {
	members
	mkstore
	# models at steps 0, 1 and 2: 2 is the step computed
	spirt-store get -f model/m@0 >m.rec
	spirt-store put model/m@1 m.rec
	spirt-store put model/m@2 m.rec
	spirt-grad -m m -t 0 -w 1 -b 8 -o g1.rec
	spirt-grad -m m -t 0 -w 0 -b 8 -o g0.rec
	# p1.w1 (its worker), p1.w0-9 (a range past the workers), p2.w1
	# (another peer's), f9 (no binding: only a minted token has it)
	for m in w1:p1.w1 wide:p1.w0-9 other:p2.w1; do
		spirt-peer keygen "${m%%:*}.key" >"${m%%:*}.hex"
		spirt-peer invite -o "${m%%:*}.tok" -R function -g group.key \
		    -i "${m#*:}" -r r1 "$(cat "${m%%:*}.hex")"
	done
	spirt-peer keygen f9.key >f9.hex
	"$ATTACK" mint group.key r1 f9 function "$(cat f9.hex)" 600 >f9.tok
	serve
	as w1
	run -65 --separate-stderr spirt-store -s "$URL" put grad/2/0 g1.rec
	assert_equal "$stderr" "spirt-store: grad/2/0: $URL: addressed to or from another peer or worker"
	run -65 spirt-store -s "$URL" put grad/2/7 g1.rec
	run -65 --separate-stderr spirt-store -s "$URL" put grad/7/1 g1.rec
	assert_equal "$stderr" "spirt-store: grad/7/1: $URL: wrong or unknown step"
	run -65 spirt-store -s "$URL" put grad/1/1 g1.rec
	run -0 spirt-store -s "$URL" put grad/2/1 g1.rec
	# its own slot: the same bytes again are fine, others are not
	run -0 spirt-store -s "$URL" put grad/2/1 g1.rec
	run -73 --separate-stderr spirt-store -s "$URL" put grad/2/1 g0.rec
	assert_equal "$stderr" "spirt-store: grad/2/1: $URL: key exists"
	# a worker the assignment does not have, then one it no longer has
	as wide
	run -65 spirt-store -s "$URL" put grad/2/7 g1.rec
	run -0 spirt-store -s "$URL" put grad/2/0 g0.rec
	spirt-shard -q --epoch 0 --live 1
	run -65 spirt-store -s "$URL" put grad/2/0 g1.rec
	# bound to another peer; bound to nothing (it still reads)
	as other
	run -65 spirt-store -s "$URL" put grad/2/1 g1.rec
	as f9
	spirt-store -s "$URL" get -f model/m@2 | cmp - m.rec
	run -65 spirt-store -s "$URL" put grad/2/1 g1.rec
	stop
	# nothing written but the slots' first values
	run -0 spirt-store ls grad/
	assert_equal "$(printf '%s\n' "${lines[@]}" | cut -f1)" \
	    "$(printf 'grad/2/0\ngrad/2/1')"
	spirt-store get -f grad/2/1 | cmp - g1.rec
	spirt-store get -f grad/2/0 | cmp - g0.rec
	for l in "p1.w1: put grad/2/0 (function): EADDR" \
	    "p1.w1: put grad/2/7 (function): EADDR" \
	    "p1.w1: put grad/7/1 (function): ESTEP" \
	    "p1.w1: put grad/1/1 (function): ESTEP" \
	    "p1.w1: put grad/2/1 (function): EEXIST" \
	    "p1.w0-9: put grad/2/7 (function): EADDR" \
	    "p1.w0-9: put grad/2/0 (function): EADDR" \
	    "p2.w1: put grad/2/1 (function): EADDR" \
	    "f9: put grad/2/1 (function): EADDR"; do
		grep -q "^spirt-peer: refused 127.0.0.1:[0-9]*: $l\$" srv.log ||
			fail "no log line '$l': $(cat srv.log)"
	done
	for c in EADDR:6 ESTEP:2 EEXIST:1; do
		grep -q "^spirt-peer: refused ${c%%:*}: ${c#*:}\$" srv.log ||
			fail "count ${c}: $(grep 'refused E' srv.log)"
	done
	grep -q '^spirt-peer: stopped: [0-9]* served, 9 refused$' srv.log
}

@test "invite -R function: an id without a binding is refused (64)" {
	spirt-peer keygen -p group.pub group.key >/dev/null
	spirt-peer keygen f.key >f.hex
	for id in f1 p1.w p1.w01 p1.w3-2 p1.x0 p1.w1-; do
		run -64 --separate-stderr spirt-peer invite -R function \
		    -g group.key -i "$id" -r r1 "$(cat f.hex)"
		assert_equal "$stderr" "spirt-peer: -i: function id \"$id\" binds no worker (PEER.wN or PEER.wN-M, e.g. p1.w0: the workers it may write gradients for)"
		[ -z "$output" ]
	done
	# a peer's id needs none
	run -0 spirt-peer invite -g group.key -i f1 -r r1 "$(cat f.hex)"
	run -0 spirt-peer invite -R function -g group.key -i p1.w0-3 -r r1 \
	    "$(cat f.hex)"
}

@test "serve: its own expired token is refused at start (65), with when" {
	members
	mkstore
	"$ATTACK" mint group.key r1 p1 peer "$(cat p1.hex)" >old.tok
	run -65 --separate-stderr timeout 30 spirt-peer serve -k p1.key \
	    -T old.tok -g group.pub -l 127.0.0.1:0
	assert_regex "$stderr" '^spirt-peer: old.tok: member token expired at [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z \(3[0-9]{3} s ago\): invite this peer again$'
	# a function's token, a token of another group: not a peer of this run
	run -65 --separate-stderr timeout 30 spirt-peer serve -k f1.key \
	    -T f1.tok -g group.pub -l 127.0.0.1:0
	assert_equal "$stderr" "spirt-peer: f1.tok: member in the wrong role"
	spirt-peer keygen -p other.pub other.key >/dev/null
	run -65 timeout 30 spirt-peer serve -k p1.key -T p1.tok -g other.pub \
	    -l 127.0.0.1:0
}

@test "serve: bodies libmicrohttpd refuses itself, or cut at -M, are logged and counted" {
	members
	mkstore
	serve -M 64k
	# a 2 GB Content-Length, one past 64 bits, one that is no number
	for cl in 2000000000 20000000000000000000000 -5; do
		curl -s -m 10 -o /dev/null -X POST -H "Content-Length: $cl" \
		    --data-binary abc "$URL/v1/msg" || true
	done
	# a chunked body over -M, a chunk of 2 GB cut short, a bad chunk
	head -c 200000 /dev/zero >big
	curl -s -m 10 -o /dev/null -X POST -H 'Transfer-Encoding: chunked' \
	    --data-binary @big "$URL/v1/msg" || true
	"$PYTHON" - "${URL#http://}" <<'PY'
import socket, sys
host, port = sys.argv[1].rsplit(':', 1)
for body in (b'80000000\r\n' + b'x' * 100000, b'zz\r\nabc\r\n0\r\n\r\n'):
    s = socket.create_connection((host, int(port)), timeout=10)
    s.sendall(b'POST /v1/msg HTTP/1.1\r\nHost: x\r\n'
              b'Transfer-Encoding: chunked\r\n\r\n' + body)
    try:
        s.recv(100)
    except OSError:
        pass
    s.close()
PY
	# and it still serves
	as f1
	run -0 spirt-store -s "$URL" get -f model/m@0
	stop
	for l in "POST /v1/msg: ETOOBIG" "/v1/msg (headers): ETOOBIG" \
	    "/v1/msg (headers): EDATA" "body: ETOOBIG" "body: EDATA"; do
		grep -q "^spirt-peer: refused 127.0.0.1:[0-9]*: $l\$" srv.log ||
			fail "no log line '$l': $(cat srv.log)"
	done
	grep -q '^spirt-peer: refused ETOOBIG: 4$' srv.log ||
		fail "$(cat srv.log)"
	grep -q '^spirt-peer: refused EDATA: 2$' srv.log
	grep -q '^spirt-peer: stopped: [0-9]* served, 6 refused$' srv.log
}
