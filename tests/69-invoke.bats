#!/usr/bin/env bats
# 69-invoke: spirt-invoke, a gradient function that calls one behind a
# FaaS gateway: against spirt-grad -F http itself (OpenFaaS, Knative) and
# tests/invoke_gw.py in front of spirt-grad -F stdio (the classic
# watchdog, Lambda's Invoke API, and gateways that hang, fail, or answer
# junk or another worker's record).  The answers are the cold
# invocation's bytes; every refusal writes nothing.  spirt-train
# --function 'spirt-invoke ...' trains, warm and cold, across network
# namespaces (tests/netns.bash) to spirt-grad's model bytes.  Servers
# listen on 127.0.0.1 or in the namespaces only, and stop in teardown.

load helper

teardown() {
	local p
	for p in ${PIDS-}; do
		kill -TERM "$p" 2>/dev/null || :
	done
	for p in ${PIDS-}; do
		wait "$p" 2>/dev/null || :
	done
	[ -z "${NETNS_PREFIX-}" ] || netns_teardown
	return 0
}

# the 4-feature, 3-class set of 60-faas and an MLP at step 0; cold.spt and
# cold0.spt: the gradients of workers 1 and 0 at step 0, cold
mkdata() {
	csv40
	spirt-shard -q -n 2 train.csv
	spirt-init -m m mlp:4-5-3
	spirt-grad -m m -t 0 -w 1 -b 8 -o cold.spt
	spirt-grad -m m -t 0 -w 0 -b 8 -o cold0.spt
}

# until_file FILE: wait (bounded, 20 s) until FILE exists and is not empty
until_file() {
	local i
	for ((i = 0; i < 200; i++)); do
		[ -s "$1" ] && return 0
		sleep 0.1
	done
	echo "no $1" >&2
	return 1
}

# grad_http [ARGS...]: spirt-grad -F http on 127.0.0.1, a free port; URL
grad_http() {
	rm -f http.err
	SPIRT_HTTP_ADDR=127.0.0.1 PORT=0 spirt-grad -F http -b 8 "$@" \
	    2>http.err &
	PIDS="${PIDS-} $!"
	until_file http.err
	URL=http://127.0.0.1:$(sed -n 's/.* port \([0-9]*\)$/\1/p' http.err)/
}

# gw [ENV=VALUE...]: tests/invoke_gw.py on 127.0.0.1 in front of
# spirt-grad -F stdio -o - (this store); GW its URL, G its directory
gw() {
	G=gw$RANDOM
	mkdir "$G"
	env "$@" "$PYTHON" "$SPIRT_ROOT/tests/invoke_gw.py" "$G" 127.0.0.1 \
	    spirt-grad -F stdio -s "$PWD/spirt.db" -b 8 -o - &
	PIDS="${PIDS-} $!"
	until_file "$G/port"
	GW=http://127.0.0.1:$(cat "$G/port")
}

# nothing: the store holds no gradient at all
nothing() {
	run -0 spirt-store ls grad/
	assert_output ''
}

@test "http: against spirt-grad -F http, cold and warm, the record is the cold invocation's bytes" {
	mkdata
	grad_http -o -
	run -0 --separate-stderr spirt-invoke -m m -t 0 -w 1 "$URL"
	[ -z "$output" ] && [ -z "$stderr" ]
	spirt-store get grad/0/1 >got.spt
	cmp cold.spt got.spt
	spirt-store rm grad/0/1
	# warm: one answer a line, a failure the function answered (no model
	# at step 9: 66, no call made) answered, not fatal
	# (the exit status: the worst code answered)
	run -66 --separate-stderr spirt-invoke -i -m m -w 1 "$URL" \
	    <<<$'0\n0 0\n9\nx'
	[ "${lines[0]}" = "step=0 worker=1 samples=8 loss=$(spirt-store \
	    inspect cold.spt | sed -n 's/^loss=//p')" ]
	[[ ${lines[1]} == "step=0 worker=0 samples=8 loss="* ]]
	[ "${lines[2]}" = "step=9 worker=1 error=66" ]
	[ "${lines[3]}" = "error=64" ]
	spirt-store get grad/0/1 | cmp cold.spt
	spirt-store get grad/0/0 | cmp cold0.spt
	[[ $stderr == *"spirt-invoke: model/m@9: no such key"* ]]
}

@test "http: a function that writes the store itself: its JSON key answer is checked against the record there" {
	mkdata
	grad_http
	run -0 --separate-stderr spirt-invoke -m m -t 0 -w 1 "$URL"
	spirt-store get grad/0/1 | cmp cold.spt
	# a function with a store of its own answers a key this store does
	# not hold: refused
	spirt-store rm grad/0/1
	spirt-shard -s fnstore -q -n 2 train.csv
	spirt-init -s fnstore -m m mlp:4-5-3
	grad_http -s fnstore
	run -65 --separate-stderr spirt-invoke -m m -t 0 -w 1 "$URL"
	[[ $stderr == *"grad/0/1: refused: it answered that it wrote grad/0/1, but the store has no such record" ]]
	nothing
}

@test "http: the function's failure is its code; spirt-grad's JSON under any status" {
	mkdata
	grad_http -o -
	# worker 5 of 2 shards has no samples: the function answers 404, 66
	run -66 --separate-stderr spirt-invoke -m m -t 0 -w 5 "$URL"
	[[ $stderr == "spirt-invoke: $URL: grad/0/5: the function failed (66): spirt-grad: "* ]]
	nothing
	gw MODE=status:500:'{"error":"spirt-grad: oops","exit":3}'
	run -70 --separate-stderr spirt-invoke -m m -t 0 -w 1 "$GW"
	[ "$stderr" = "spirt-invoke: $GW: grad/0/1: the function failed (70): spirt-grad: oops" ]
	nothing
}

@test "the classic watchdog in front of spirt-grad -F stdio: the same bytes; a bearer token from a file or SPIRT_INVOKE_TOKEN" {
	mkdata
	gw MODE=http TOKEN=s3cret
	run -69 --separate-stderr spirt-invoke -m m -t 0 -w 1 "$GW"
	[[ $stderr == *"HTTP status 401: no such function, or not ours to call" ]]
	nothing
	echo s3cret >tok
	run -0 spirt-invoke -T tok -m m -t 0 -w 1 "$GW"
	spirt-store get grad/0/1 | cmp cold.spt
	SPIRT_INVOKE_TOKEN=s3cret run -0 spirt-invoke -m m -t 0 -w 0 "$GW"
	spirt-store get grad/0/0 | cmp cold0.spt
	# the body is the request spirt-grad reads; the token is no argument
	grep -qx 'POST / {"step":0,"worker":1,"model":"m"}' "$G/requests"
	run -66 spirt-invoke -T /nonexistent/tok -m m -t 0 "$GW"
	: >empty
	run -64 spirt-invoke -T empty -m m -t 0 "$GW"
}

@test "lambda: the Invoke API in front of spirt-grad -F stdio: the same bytes; errorType is the code; no such function 69" {
	mkdata
	gw MODE=lambda NAME=grad
	u=$GW/2015-03-31/functions/grad/invocations
	run -0 spirt-invoke -a lambda -m m -t 0 -w 1 "$u"
	spirt-store get grad/0/1 | cmp cold.spt
	run -66 --separate-stderr spirt-invoke --as lambda -i -m m "$u" \
	    <<<$'0 0\n0 5'
	[[ ${lines[0]} == "step=0 worker=0 samples=8 loss="* ]]
	[ "${lines[1]}" = "step=0 worker=5 error=66" ]
	spirt-store get grad/0/0 | cmp cold0.spt
	[[ $stderr == *"grad/0/5: the function failed (66): spirt-grad: "* ]]
	run -66 spirt-store get grad/0/5
	run -69 --separate-stderr spirt-invoke -a lambda -m m -t 0 -w 1 \
	    "$GW/2015-03-31/functions/nosuch/invocations"
	[[ $stderr == *"HTTP status 404: no such function"* ]]
}

@test "refused, nothing written: junk, another worker's or step's record, a record over the model's size" {
	mkdata
	gw MODE=status:200:hello
	run -65 --separate-stderr spirt-invoke -m m -t 0 -w 1 "$GW"
	[[ $stderr == *"HTTP status 200, 5 bytes: neither a gradient record nor a function's JSON answer" ]]
	gw MODE=file:cold0.spt
	run -65 --separate-stderr spirt-invoke -m m -t 0 -w 1 "$GW"
	[[ $stderr == *"grad/0/1: refused: the record: another worker's (origin 0, not 1)" ]]
	# warm: answered error=65, and the next request is served
	run -65 --separate-stderr spirt-invoke -i -m m -w 1 "$GW" <<<$'0\n0 0'
	[ "${lines[0]}" = "step=0 worker=1 error=65" ]
	[[ ${lines[1]} == "step=0 worker=0 samples=8 "* ]]
	spirt-store rm grad/0/0
	# a record of step 0 asked for step 1
	spirt-store get model/m@0 | spirt-store put model/m@1
	run -65 --separate-stderr spirt-invoke -m m -t 1 -w 0 "$GW"
	[[ $stderr == *"refused: the record: step 0, not 1" ]]
	# another model's record (another spec)
	spirt-init -m n mlp:4-6-3
	run -65 --separate-stderr spirt-invoke -m n -t 0 -w 0 "$GW"
	[[ $stderr == *"refused: the record: f32, rank 1, "* ]]
	# a torn record, and an answer longer than the model's can be
	head -c 200 cold.spt >torn.spt
	gw MODE=file:torn.spt
	run -65 spirt-invoke -m m -t 0 -w 1 "$GW"
	{ cat cold.spt; head -c 5000 /dev/zero; } >big.spt
	gw MODE=file:big.spt
	run -65 --separate-stderr spirt-invoke -m m -t 0 -w 1 "$GW"
	[[ $stderr == *"an answer over "*" bytes" ]]
	nothing
}

@test "a gateway that hangs: 75 within the deadline; warm, the process ends unanswered; SPIRT_DEADLINE" {
	mkdata
	gw MODE=hang
	s=$(date +%s%N)
	run -75 --separate-stderr spirt-invoke -D 700 -m m -t 0 -w 1 "$GW"
	e=$(( ($(date +%s%N) - s) / 1000000 ))
	[ "$e" -ge 650 ] && [ "$e" -lt 5000 ]
	[[ $stderr == *"grad/0/1: no answer within the deadline (700 ms)"* ]]
	# one attempt: the deadline was spent in it
	[ "$(wc -l <"$G/requests")" -eq 1 ]
	SPIRT_DEADLINE=300 run -75 --separate-stderr spirt-invoke -i -m m \
	    -w 1 "$GW" <<<$'0\n0 0'
	[ -z "$output" ]
	nothing
}

@test "retries only where no answer came: 503 twice then the record; 503 throughout 75; 500 once; nothing there 69" {
	mkdata
	gw MODE=http FLAKY=2
	run -0 --separate-stderr spirt-invoke -v -m m -t 0 -w 1 "$GW"
	[[ $stderr == *": grad/0/1: 8 samples, loss "*", 3 attempts, "* ]]
	[ "$(wc -l <"$G/requests")" -eq 3 ]
	spirt-store get grad/0/1 | cmp cold.spt
	spirt-store rm grad/0/1
	gw MODE=http FLAKY=100
	run -75 --separate-stderr spirt-invoke -r 1 -m m -t 0 -w 1 "$GW"
	[[ $stderr == *"grad/0/1: HTTP status 503" ]]
	[ "$(wc -l <"$G/requests")" -eq 2 ]
	gw MODE=status:500:'Internal Server Error'
	run -75 --separate-stderr spirt-invoke -m m -t 0 -w 1 "$GW"
	[ "$(wc -l <"$G/requests")" -eq 1 ]
	# a port where nothing listens: tried 3 times, then 69
	port=$(cat "$G/port")
	# shellcheck disable=SC2086
	kill -TERM $PIDS
	# shellcheck disable=SC2086
	wait $PIDS || :
	PIDS=
	run -69 --separate-stderr spirt-invoke -m m -t 0 -w 1 \
	    "http://127.0.0.1:$port/"
	[[ $stderr == *"grad/0/1: Couldn't connect to server" ]]
	nothing
}

@test "misuse 64, no model 66, an answer not written to stdout 74" {
	mkdata
	run -64 spirt-invoke -m m -t 0
	run -64 spirt-invoke -t 0 http://127.0.0.1:1/
	run -64 spirt-invoke -m m http://127.0.0.1:1/
	run -64 --separate-stderr spirt-invoke -a grpc -m m -t 0 \
	    http://127.0.0.1:1/
	[ "$stderr" = 'spirt-invoke: -a grpc: not http or lambda' ]
	run -64 --separate-stderr spirt-invoke -m m -t 0 ftp://127.0.0.1/
	[ "$stderr" = 'spirt-invoke: ftp://127.0.0.1/: not an http:// or https:// URL' ]
	run -64 spirt-invoke -D 0 -m m -t 0 http://127.0.0.1:1/
	run -64 spirt-invoke -m 'a/b' -t 0 http://127.0.0.1:1/
	run -66 --separate-stderr spirt-invoke -m m -t 3 http://127.0.0.1:1/
	[ "$stderr" = 'spirt-invoke: model/m@3: no such key' ]
	run -66 spirt-invoke -s nostore -m m -t 0 http://127.0.0.1:1/
	grad_http -o -
	# shellcheck disable=SC2016
	run -74 sh -c 'echo 0 | spirt-invoke -i -m m "$1" >/dev/full' sh "$URL"
}

# ---- spirt-train --function 'spirt-invoke ...' across namespaces ----

STEPS=3

# train HOST STORE [ARGS...]: the training, the same every time, on HOST
# (0: here)
train() {
	local h=$1 s=$2 x=()
	shift 2
	[ "$h" -eq 0 ] || x=(netns_exec "$h")
	"${x[@]}" timeout 120 spirt-train -q -m m --spec mlp:4-5-3 -n 2 -b 8 \
	    -S 1 --steps $STEPS --eval-every $STEPS -s "$PWD/$s" "$@"
}

# gateway STORE [PORT]: spirt-grad -F http on host 1, port PORT (8080),
# the function of a deployment reading STORE (the training's batch, seed)
gateway() {
	rm -f gw.err
	# ip, env and spirt-grad exec each other: $! is the gateway itself,
	# so that gateway_stop's signal frees its port (a subshell's pid
	# would not)
	ip netns exec "$(netns_name 1)" env SPIRT_HTTP_ADDR="$(netns_addr 1)" \
	    PORT="${2:-8080}" \
	    spirt-grad -F http -s "$PWD/$1" -b 8 -S 1 -o - 2>gw.err &
	GPID=$!
	until_file gw.err
	grep 'listening on' gw.err || { cat gw.err >&2; return 1; }
}

gateway_stop() {
	kill -TERM "$GPID"
	wait "$GPID" || :
}

# same STORE: its model and optimiser state at STEPS are ref's
same() {
	local k
	for k in model/m@$STEPS opt/m@$STEPS; do
		[ "$(spirt-store -s ref get "$k" | md5sum)" = \
		  "$(spirt-store -s "$1" get "$k" | md5sum)" ]
	done
}

@test "netns: spirt-train --function 'spirt-invoke URL' on one host, spirt-grad -F http on another: warm and cold, spirt-grad's model bytes" {
	load netns
	netns_require
	csvbase
	for s in ref warm cold; do cp -r base "$s"; done
	run -0 train 0 ref
	netns_setup 2
	fn="spirt-invoke -D 10000 http://$(netns_addr 1):8080/"
	gateway warm
	run -0 train 2 warm --function "$fn"
	gateway_stop
	same warm
	gateway cold 8081
	run -0 train 2 cold --cold --function "${fn/8080/8081}"
	gateway_stop
	same cold
}

@test "netns: a function whose gateway hangs is declared dead at its deadline and the round goes on" {
	load netns
	netns_require
	csvbase
	cp -r base run
	netns_setup 2
	gateway run
	# worker 1's function calls a gateway that takes requests and never
	# answers
	netns_exec 1 env MODE=hang "$PYTHON" "$SPIRT_ROOT/tests/invoke_gw.py" \
	    . "$(netns_addr 1)" true &
	until_file port
	cat >fn <<-EOF
	#!/bin/sh
	u=http://$(netns_addr 1):8080/
	case " \$* " in *" -w 1 "*) u=http://$(netns_addr 1):$(cat port)/ ;; esac
	exec spirt-invoke -D 1500 -r 0 "\$u" "\$@"
	EOF
	chmod +x fn
	run -0 --separate-stderr train 2 run --function "$PWD/fn"
	gateway_stop
	[[ $stderr == *"grad/0/1: no answer within the deadline (1500 ms)"* ]]
	run -0 spirt-store -s run get model/m@$STEPS
	grep -q '"step":0,"worker":1' requests
}

@test "netns: a gateway that answers junk or 500: the warm step fails (75), nothing of it applied; cold, the function is dead and the run goes on" {
	load netns
	netns_require
	csvbase
	cp -r base run
	cp -r base cold
	netns_setup 2
	# worker 0's gateway reads the store of the run it serves: a gateway
	# on another store fails worker 0 too (66, no model), and which of
	# the two failures the step reports first is a race
	gateway run
	netns_exec 1 env MODE=status:200:junk "$PYTHON" \
	    "$SPIRT_ROOT/tests/invoke_gw.py" . "$(netns_addr 1)" true &
	until_file port
	mkdir g500
	netns_exec 1 env MODE=status:500:oops "$PYTHON" \
	    "$SPIRT_ROOT/tests/invoke_gw.py" g500 "$(netns_addr 1)" true &
	until_file g500/port
	cat >fn <<-EOF
	#!/bin/sh
	u=http://$(netns_addr 1):8080/
	case " \$* " in *" -w 1 "*) u=http://$(netns_addr 1):\$GWPORT/ ;; esac
	exec spirt-invoke -D 3000 "\$u" "\$@"
	EOF
	chmod +x fn
	# warm: worker 1's answer is error=65: the step fails, 75
	GWPORT=$(cat port) run -75 --separate-stderr train 2 run \
	    --function "$PWD/fn"
	[[ $stderr == *"grad/0/1: HTTP status 200, 4 bytes: neither a gradient record nor a function's JSON answer"* ]]
	run -66 spirt-store -s run get model/m@1
	run -66 spirt-store -s run get grad/0/1
	gateway_stop
	gateway cold
	# cold: worker 1's function exits 75 (a 500 is not retried): dead,
	# and the run goes on with worker 0's
	GWPORT=$(cat g500/port) run -0 --separate-stderr train 2 cold --cold \
	    --function "$PWD/fn"
	gateway_stop
	[[ $stderr == *"grad/0/1: HTTP status 500"* ]]
	run -0 spirt-store -s cold get model/m@$STEPS
	[ "$(grep -c . g500/requests)" -ge 1 ]
}
