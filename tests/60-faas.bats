#!/usr/bin/env bats
# 60-faas: spirt-grad -F under each runner's contract, called the way the
# runner calls it: stdio (OpenFaaS classic watchdog, OpenWhisk docker
# skeleton), http (of-watchdog, Knative, Cloud Run, OpenWhisk /init and
# /run) and lambda (AWS Lambda's Runtime API, played by
# tests/lambda_api.py).  Every answer is checked against the cold
# invocation's bytes.  Servers listen on 127.0.0.1 only and are stopped in
# teardown.

load helper

# the 4-feature, 3-class set of 20-grad and an MLP at step 0; cold.spt is
# worker 1's gradient of step 0, as the cold invocation writes it
mkdata() {
	csv40
	spirt-shard -q -n 2 train.csv
	spirt-init -m m mlp:4-5-3
	spirt-grad -m m -t 0 -w 1 -b 8 -o cold.spt
	spirt-grad -m m -t 0 -w 0 -b 8 -o cold0.spt
}

teardown() {
	local p
	for p in ${PIDS-}; do
		kill -TERM "$p" 2>/dev/null || true
	done
	for p in ${PIDS-}; do
		wait "$p" 2>/dev/null || true
	done
}

# bg VAR CMD...: start CMD in the background, its pid in VAR and in PIDS
bg() {
	local v=$1
	shift
	"$@" &
	printf -v "$v" %s "$!"
	PIDS="${PIDS-} $!"
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

# until_grep REGEX FILE: wait (bounded, 20 s) until FILE holds a line
until_grep() {
	local i
	for ((i = 0; i < 200; i++)); do
		grep -q -- "$1" "$2" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "no \"$1\" in $2" >&2
	return 1
}

@test "-F: a cold spirt-grad loads neither libcurl nor libmicrohttpd" {
	# they (and the thirty libraries libcurl pulls in) would triple
	# the start-up time of every cold invocation; -F loads them itself
	run -0 ldd "$SPIRT_ROOT/spirt-grad"
	refute_output --partial libcurl
	refute_output --partial libmicrohttpd
	refute_output --partial libgnutls
}

@test "no tool links libcurl (lib/curldl.c loads it)" {
	local t n=0
	for t in "$SPIRT_ROOT"/spirt-*; do
		[ "$(head -c 4 "$t" | tail -c 3)" = ELF ] || continue
		n=$((n + 1))
		run -0 ldd "$t"
		refute_output --partial libcurl
	done
	[ "$n" -ge 8 ]          # the tools were there to check
}

@test "without libcurl.so.4 the tools start; a URL store and -F lambda: 69" {
	local at lib
	# where dlopen() finds it (the message names that path), the file
	at=$(ldconfig -p 2>/dev/null |
	    awk '$1 == "libcurl.so.4" { print $NF; exit }')
	[ -n "$at" ] || skip "no libcurl.so.4 in the cache"
	lib=$(readlink -f "$at")
	unshare -rm true 2>/dev/null || skip "no user and mount namespaces"
	mkdata
	# libcurl.so.4 is an empty file in the namespace: dlopen() fails
	cat >nocurl.sh <<-EOF
	mount --bind /dev/null '$lib' || exit 99
	exec "\$@"
	EOF
	run -0 unshare -rm sh nocurl.sh spirt-grad -h
	run -0 unshare -rm sh nocurl.sh spirt-grad -m m -t 0 -w 1 -b 8 \
	    -o nc.spt
	cmp cold.spt nc.spt
	run -0 unshare -rm sh nocurl.sh spirt-store ls
	run -69 --separate-stderr unshare -rm sh nocurl.sh \
	    spirt-store -s http://127.0.0.1:9/ ls
	assert_equal "${stderr%%libcurl.so.4:*}" \
	    "spirt-store: http://127.0.0.1:9/: ${at%libcurl.so.4}"
	run -69 --separate-stderr env AWS_LAMBDA_RUNTIME_API=127.0.0.1:9 \
	    unshare -rm sh nocurl.sh spirt-grad -F lambda -m m -b 8
	assert_equal "${stderr%%libcurl.so.4:*}" \
	    "spirt-grad: -F lambda: ${at%libcurl.so.4}"
}

# ---- stdio: OpenFaaS classic watchdog, OpenWhisk docker skeleton ----

@test "stdio: Http_Query's request answers the cold record, nothing on stderr" {
	mkdata
	run -0 --separate-stderr env Http_Method=GET Http_Path=/ \
	    Http_Query='step=0&worker=1&model=m' spirt-grad -F stdio -b 8 \
	    -o - </dev/null
	[ -z "$stderr" ]
	env Http_Query='step=0&worker=1&model=m' spirt-grad -F stdio -b 8 \
	    -o - </dev/null >out.spt
	cmp cold.spt out.spt
	# the body, the path, and SPIRT_FAAS instead of -F
	echo 'step=0&worker=1' | SPIRT_FAAS=stdio spirt-grad -m m -b 8 -o - \
	    >body.spt
	cmp cold.spt body.spt
	Http_Path=/grad/0/0 spirt-grad -F stdio -m m -b 8 -o - </dev/null \
	    >path.spt
	cmp cold0.spt path.spt
}

@test "stdio: warnings and library words never reach stderr on success" {
	mkdata
	# without OpenBLAS the cold tool warns on stderr ...
	SPIRT_BLAS_LIB=/nonexistent spirt-grad -m m -t 0 -w 1 -b 8 \
	    -o ref.spt 2>cold.err
	grep -q 'warning: OpenBLAS' cold.err
	# ... which the classic watchdog would mix into the answer: -F
	# stdio keeps stderr empty, even with -v, and the record whole
	run -0 --separate-stderr env SPIRT_BLAS_LIB=/nonexistent \
	    Http_Query='step=0&worker=1' spirt-grad -F stdio -v -m m -b 8 \
	    -o - </dev/null
	[ -z "$stderr" ]
	echo 'step=0&worker=1' | SPIRT_BLAS_LIB=/nonexistent \
	    spirt-grad -F stdio -v -m m -b 8 -o - 2>&1 | cmp - ref.spt
}

@test "stdio: OpenWhisk's JSON operand, the gradient into the store" {
	mkdata
	run -0 --separate-stderr spirt-grad -F stdio -m m -b 8 \
	    '{"step":0,"worker":"1","model":"m"}' </dev/null
	[ -z "$stderr" ]
	# the last line of stdout is the JSON result OpenWhisk wants
	[ "${#lines[@]}" -eq 1 ]
	$PYTHON -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["key"] == "grad/0/1" and d["step"] == 0 and d["worker"] == 1, d
assert d["samples"] == 8 and d["loss"] > 0, d
' "$output"
	spirt-store get grad/0/1 > stored.spt
	cmp cold.spt stored.spt
}

@test "stdio: a bad request answers JSON, the message on stderr, exit code" {
	mkdata
	before=$(store_digest "$SPIRT_STORE")
	run -64 --separate-stderr env Http_Query='step=0&worker=1&batch=9' \
	    spirt-grad -F stdio -m m -b 8 </dev/null
	assert_output '{"error":"spirt-grad: request: unknown parameter \"batch\" (step, worker, model)","exit":64}'
	[ "$stderr" = 'spirt-grad: request: unknown parameter "batch" (step, worker, model)' ]
	run -64 --separate-stderr env Http_Query='step=01' \
	    spirt-grad -F stdio -m m </dev/null
	assert_output --partial '"exit":64}'
	run -64 --separate-stderr spirt-grad -F stdio -m m '{"worker":1}' \
	    </dev/null
	assert_output '{"error":"spirt-grad: request: no step (step=N, /grad/N/W, or -t)","exit":64}'
	run -64 --separate-stderr env Http_Method=PUT Http_Query='step=0' \
	    spirt-grad -F stdio -m m </dev/null
	assert_output --partial 'method PUT: GET or POST'
	run -64 --separate-stderr env Http_Query='step=0' \
	    spirt-grad -F stdio -m m '{"step":0}' </dev/null
	assert_output --partial 'step given twice'
	run -66 --separate-stderr env Http_Path=/x spirt-grad -F stdio -m m \
	    </dev/null
	assert_output --partial 'path \"/x\"'
	head -c 70000 /dev/zero | tr '\0' a > big
	run -64 --separate-stderr spirt-grad -F stdio -m m <big
	assert_output --partial 'a body over 65536 bytes'
	run -66 --separate-stderr env Http_Query='step=9&worker=1' \
	    spirt-grad -F stdio -m m </dev/null
	assert_output '{"error":"spirt-grad: model/m@9: no such key","exit":66}'
	[ "$stderr" = 'spirt-grad: model/m@9: no such key' ]
	# a failure before the request is read: the store
	run -66 --separate-stderr env Http_Query='step=0' \
	    spirt-grad -F stdio -m m -s nowhere </dev/null
	assert_output '{"error":"spirt-grad: nowhere: No such file or directory","exit":66}'
	[ "$stderr" = 'spirt-grad: nowhere: No such file or directory' ]
	[ "$(store_digest "$SPIRT_STORE")" = "$before" ]
}

@test "-F: bad contracts and combinations exit 64 before any work" {
	run -64 --separate-stderr spirt-grad -F cgi -m m
	[ "$stderr" = 'spirt-grad: -F cgi: not stdio, http or lambda' ]
	run -64 --separate-stderr spirt-grad -F stdio -i -m m
	assert_equal "$stderr" 'spirt-grad: -F and --serve: -F stdio serves invocations itself'
	run -64 --separate-stderr spirt-grad -F http -o x.spt -m m
	assert_equal "$stderr" 'spirt-grad: -o x.spt and -F: the answer is the record (-o -) or the store key written'
	run -64 --separate-stderr env -u AWS_LAMBDA_RUNTIME_API \
	    spirt-grad -F lambda -m m
	assert_equal "$stderr" 'spirt-grad: -F lambda: AWS_LAMBDA_RUNTIME_API is not set'
	# an operand only under -F stdio
	run -64 --separate-stderr spirt-grad -m m -t 0 'step=0'
	[[ "$stderr" == 'usage: spirt-grad '* ]]
	run -64 --separate-stderr spirt-grad -F stdio -m m a b
}

# ---- http: of-watchdog, Knative, Cloud Run, OpenWhisk ----

# serve ARGS...: spirt-grad -F http on a free loopback port; sets URL, GPID
serve() {
	SPIRT_HTTP_ADDR=127.0.0.1 PORT=0 bg GPID spirt-grad -F http "$@" \
	    2>http.err
	until_grep ' port [0-9]' http.err
	URL=http://127.0.0.1:$(sed -n 's/.* port \([0-9]*\)$/\1/p' http.err)
}

@test "http: invocations by path, query and body; health; OpenWhisk" {
	mkdata
	serve -m m -b 8 -o -
	run -0 curl -sS "$URL/healthz"
	assert_output ok
	run -0 curl -sS "$URL/readyz"
	assert_output ready
	curl -sSf -o a.spt -D a.hdr "$URL/grad/0/1"
	cmp cold.spt a.spt
	grep -qi '^content-type: application/octet-stream' a.hdr
	curl -sSf -o b.spt "$URL/?step=0&worker=1"
	cmp cold.spt b.spt
	curl -sSf -o c.spt --data 'step=0&worker=0' "$URL/"
	cmp cold0.spt c.spt
	curl -sSf -o d.spt -H 'Content-Type: application/json' \
	    --data '{"step":0,"worker":1}' "$URL/"
	cmp cold.spt d.spt
	# OpenWhisk: /init, then /run with the parameters in "value"; the
	# record comes back in base64
	run -0 curl -sSf --data '{"value":{"name":"g","main":"main"}}' \
	    "$URL/init"
	assert_output '{"OK":true}'
	curl -sSf --data '{"value":{"step":0,"worker":1},"namespace":"n",
	    "action_name":"/n/g","activation_id":"a1","deadline":"1"}' \
	    "$URL/run" > run.json
	$PYTHON -c '
import base64, json, sys
d = json.load(open("run.json"))
assert d["step"] == 0 and d["worker"] == 1 and d["samples"] == 8, d
sys.stdout.buffer.write(base64.b64decode(d["record"]))' > run.spt
	cmp cold.spt run.spt
}

@test "http: failures answer JSON with the status of their exit code" {
	mkdata
	serve -m m -b 8 -o -
	# code url [curl args]: the status, and the body's exit field
	check() {
		local want=$1 exit=$2
		shift 2
		run -0 curl -sS -o body -w '%{http_code}' "$@"
		[ "$output" = "$want" ] || { echo "$* gave $output"; return 1; }
		[ -z "$exit" ] || grep -q "\"exit\":$exit}" body ||
		    { echo "$*: $(cat body)"; return 1; }
	}
	check 404 66 "$URL/grad/9/1"
	check 400 64 "$URL/grad/0/1?batch=3"
	check 400 64 "$URL/grad/0/1?step=0"
	check 400 64 "$URL/?worker=1"
	check 404 66 "$URL/nowhere"
	check 404 66 "$URL/grad/1"
	check 405 64 -X DELETE "$URL/"
	check 405 64 -X POST "$URL/healthz"
	head -c 70000 /dev/zero | tr '\0' a > big
	check 413 64 --data-binary @big "$URL/"
	grep -qF 'request body over 65536 bytes' body ||
	    { echo "413: $(cat body)"; false; }
	check 200 '' "$URL/healthz"
	# failed invocations are logged on stderr, one line each
	grep -qx 'spirt-grad: model/m@9: no such key' http.err
	# a bad model in the store: 422 (65)
	printf 'junk' > junk
	$PYTHON -c "$PYREC"'
out(st.encode(np.zeros(7, np.float32), name="mlp:4-5-3", step=2))' > bad.spt
	spirt-store put model/m@2 bad.spt
	check 422 65 "$URL/grad/2/1"
}

@test "http: store mode writes grad/<t>/<w>; SIGTERM drains and exits 0" {
	mkdata
	serve -m m -b 8
	run -0 curl -sSf "$URL/grad/0/1"
	assert_output '{"step":0,"worker":1,"samples":8,"loss":'"$(
	    spirt-store inspect cold.spt | sed -n 's/^loss=//p')"',"key":"grad/0/1"}'
	spirt-store get grad/0/1 > stored.spt
	cmp cold.spt stored.spt
	kill -TERM "$GPID"
	rc=0
	wait "$GPID" || rc=$?
	[ "$rc" -eq 0 ]
	grep -qx 'spirt-grad: listening on 127.0.0.1 port [0-9]*' http.err
	[ "$(wc -l < http.err)" -eq 1 ]
	# the port is closed
	run ! curl -sS "$URL/healthz"
}

@test "http: concurrent invocations each answer the cold bytes" {
	mkdata
	# one context serves every connection's thread: the invocations
	# take turns, and health checks are answered meanwhile
	spirt-init -m big -t 0 mlp:4-300-300-3
	serve -b 40 -o -
	cpids=
	for i in 1 2 3 4; do
		curl -sS -o "big$i.spt" "$URL/grad/0/$((i % 2))?model=big" &
		cpids="$cpids $!"
	done
	for i in 1 2 3 4 5; do
		run -0 curl -sS --max-time 10 "$URL/healthz"
		assert_output ok
	done
	wait $cpids
	spirt-grad -m big -t 0 -w 0 -b 40 -o big0.spt
	spirt-grad -m big -t 0 -w 1 -b 40 -o big1.spt
	for i in 1 2 3 4; do cmp "big$((i % 2)).spt" "big$i.spt"; done
}

@test "http: a port in use exits with the cause" {
	mkdata
	serve -m m
	port=${URL##*:}
	run -74 --separate-stderr env SPIRT_HTTP_ADDR=127.0.0.1 PORT=$port \
	    spirt-grad -F http -m m
	[ "$stderr" = "spirt-grad: 127.0.0.1 port $port: Address already in use" ]
	run -64 --separate-stderr env PORT=70000 spirt-grad -F http -m m
	run -64 --separate-stderr env SPIRT_HTTP_ADDR=localhost PORT=0 \
	    spirt-grad -F http -m m
	[ "$stderr" = 'spirt-grad: localhost: not a numeric address' ]
}

# ---- lambda: the custom-runtime loop against tests/lambda_api.py ----

# api EVENT...: start the Runtime API stand-in; sets API, APID
api() {
	mkdir -p L
	bg APID "$PYTHON" "$SPIRT_ROOT/tests/lambda_api.py" L "$@"
	until_file L/port
	API=127.0.0.1:$(cat L/port)
}

@test "lambda: every request of the loop follows the Runtime API" {
	mkdata
	# the first event is held 2 s: a loop with a timeout on /next fails
	HOLD=2 api '{"step":0,"worker":1}' \
	    '{"queryStringParameters":{"step":"0","worker":"0"},"headers":{}}' \
	    '{"step":9,"worker":1}' 'not json' '{"step":0,"worker":1}'
	AWS_LAMBDA_RUNTIME_API=$API bg GPID spirt-grad -F lambda -m m -b 8 \
	    -o - 2>lambda.err
	until_file L/req-5.response
	until_grep . L/requests
	# it waits for a sixth event that never comes: SIGTERM ends it
	for ((i = 0; i < 200; i++)); do
		[ "$(grep -c next L/requests)" -ge 6 ] && break
		sleep 0.1
	done
	caught "$GPID" 15
	kill -TERM "$GPID"
	rc=0
	wait "$GPID" || rc=$?
	[ "$rc" -eq 0 ]
	[ ! -e L/violations ] || { cat L/violations; false; }
	n=/2018-06-01/runtime/invocation
	cat > want <<-EOF
	GET $n/next
	POST $n/req-1/response
	GET $n/next
	POST $n/req-2/response
	GET $n/next
	POST $n/req-3/error
	GET $n/next
	POST $n/req-4/error
	GET $n/next
	POST $n/req-5/response
	GET $n/next
	EOF
	diff want L/requests
	cmp cold.spt L/req-1.response
	cmp cold0.spt L/req-2.response
	cmp cold.spt L/req-5.response
	[ "$(cat L/req-1.type)" = application/octet-stream ]
	[ "$(cat L/req-3.type)" = application/json ]
	run cat L/req-3.error
	assert_output '{"errorMessage":"spirt-grad: model/m@9: no such key","errorType":"Spirt.NoInput","stackTrace":[]}'
	run cat L/req-4.error
	assert_output '{"errorMessage":"spirt-grad: event: JSON: object expected","errorType":"Spirt.Usage","stackTrace":[]}'
	grep -qx 'spirt-grad: model/m@9: no such key' lambda.err
}

@test "lambda: store mode answers JSON; a start-up failure goes to init/error" {
	mkdata
	api '{"step":0,"worker":1}'
	AWS_LAMBDA_RUNTIME_API=$API bg GPID spirt-grad -F lambda -m m -b 8
	until_file L/req-1.response
	kill -TERM "$GPID"
	rc=0
	wait "$GPID" || rc=$?
	[ "$rc" -eq 0 ]
	run cat L/req-1.response
	assert_output --regexp '^\{"step":0,"worker":1,"samples":8,"loss":[0-9.e-]+,"key":"grad/0/1"\}$'
	spirt-store get grad/0/1 > stored.spt
	cmp cold.spt stored.spt

	# the store is missing: /init/error, exit 66, no /next
	: > L/requests
	run -66 --separate-stderr env AWS_LAMBDA_RUNTIME_API=$API \
	    spirt-grad -F lambda -m m -s nowhere
	[ "$stderr" = 'spirt-grad: nowhere: No such file or directory' ]
	[ "$(cat L/requests)" = 'POST /2018-06-01/runtime/init/error' ]
	run cat L/init.error
	assert_output '{"errorMessage":"spirt-grad: nowhere: No such file or directory","errorType":"Spirt.NoInput","stackTrace":[]}'
	# a malformed -p file: 65
	printf 'junk' > junk.spt
	run -65 --separate-stderr env AWS_LAMBDA_RUNTIME_API=$API \
	    spirt-grad -F lambda -p junk.spt
	grep -q '"errorType":"Spirt.DataErr"' L/init.error
	[ ! -e L/violations ] || { cat L/violations; false; }
}

@test "lambda: no Runtime API there exits 69" {
	mkdata
	# a port that was free a moment ago
	port=$($PYTHON -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	run -69 --separate-stderr env AWS_LAMBDA_RUNTIME_API=127.0.0.1:$port \
	    spirt-grad -F lambda -m m
	assert_equal "${stderr%%:*}" 'spirt-grad'
	[[ "$stderr" == *"Runtime API 127.0.0.1:$port: "*"/next: "* ]]
}
