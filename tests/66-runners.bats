#!/usr/bin/env bats
# 66-runners: one training, unchanged, behind each FaaS contract of
# spirt-grad -F: stdio (as OpenFaaS's classic watchdog calls it), http
# (of-watchdog, Knative, Cloud Run) and lambda (AWS Lambda's Runtime
# API, played by tests/lambda_api.py), each function of each step one
# invocation made the way that runner makes it; spirt-train --cold drives
# them through SPIRT_FANOUT, and gets the model bytes xargs gets.  (GNU
# parallel over ssh and Slurm's srun: tests/63-parallel, tests/64-slurm.)
# Servers listen on 127.0.0.1 only and are stopped in teardown.

load helper

STEPS=3

teardown() {
	local p
	for p in ${PIDS-}; do
		kill -TERM "$p" 2>/dev/null || :
	done
	for p in ${PIDS-}; do
		wait "$p" 2>/dev/null || :
	done
}

# train STORE: the training, the same every time
train() {
	spirt-train -q --cold -m m --spec mlp:4-5-3 -n 2 -b 8 -S 1 \
	    --steps $STEPS --eval-every $STEPS -s "$1"
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

# the fan-out's command: "via CONTRACT spirt-grad ARGS": the invocation
# spirt-train asks for, made as CONTRACT's runner makes it; its answer
# must name the gradient it wrote
mkvia() {
	cat >via <<-'EOF'
	#!/bin/sh
	c=$1
	shift 2
	while [ $# -gt 0 ]; do
		case $1 in
		-t) t=$2; shift ;; -w) w=$2; shift ;; -m) m=$2; shift ;;
		-b) b=$2; shift ;; -S) s=$2; shift ;;
		esac
		shift
	done
	a=$PWD/answer.$c.$t.$w
	case $c in
	stdio)  # the classic watchdog: the request in Http_Query, the
		# answer on stdout, the function's flags its deployment's
		Http_Query="step=$t&worker=$w&model=$m" \
		    spirt-grad -F stdio -b "$b" -S "$s" </dev/null >"$a" || exit
		;;
	http)   # a request to the running service
		[ "$b $s" = "8 1" ] || exit 64  # (as deployed)
		curl -sSf -o "$a" "$URL/grad/$t/$w?model=$m" || exit
		;;
	lambda) # an invocation queued for the Runtime API; the runtime
		# loop answers it in turn
		[ "$b $s" = "8 1" ] || exit 64
		n=$(($(cat L/n) + 1))
		echo $n >L/n
		printf '{"step":%s,"worker":%s,"model":"%s"}' "$t" "$w" "$m" \
		    >L/event.tmp
		mv L/event.tmp "Q/$n"
		i=0
		until [ -e "L/req-$n.response" ] || [ -e "L/req-$n.error" ]; do
			i=$((i + 1))
			[ $i -lt 600 ] || exit 75
			sleep 0.05
		done
		[ -e "L/req-$n.response" ] || { cat "L/req-$n.error" >&2; exit 65; }
		cp "L/req-$n.response" "$a"
		;;
	esac
	grep -q "\"key\":\"grad/$t/$w\"" "$a"
	EOF
	chmod +x via
}

# same STORE: its model and optimiser state at STEPS are ref's, byte for
# byte, and its log's evaluations ref's
same() {
	local k
	for k in model/m@$STEPS opt/m@$STEPS; do
		[ "$(spirt-store -s ref get "$k" | md5sum)" = \
		  "$(spirt-store -s "$1" get "$k" | md5sum)" ]
	done
	diff <(cut -f2- ref.train-m.tsv) <(cut -f2- "$1.train-m.tsv")
}

@test "one training behind each FaaS contract (stdio, http, lambda): the model bytes of xargs" {
	csvbase
	for s in ref stdio http lambda; do
		cp -r base $s
	done
	mkvia
	run -0 train ref

	# stdio: one process per invocation, two at a time
	SPIRT_FANOUT="xargs -P 2 -I{} $PWD/via stdio" run -0 train stdio
	[ "$(ls answer.stdio.* | wc -l)" -eq $((2 * STEPS)) ]
	same stdio

	# http: one service for the whole training, invoked by path
	SPIRT_HTTP_ADDR=127.0.0.1 PORT=0 spirt-grad -F http -s "$PWD/http" \
	    -m m -b 8 -S 1 2>http.err &
	PIDS="${PIDS-} $!"
	for ((i = 0; i < 200; i++)); do
		grep -q ' port [0-9]' http.err && break
		sleep 0.1
	done
	export URL=http://127.0.0.1:$(sed -n 's/.* port \([0-9]*\)$/\1/p' http.err)
	SPIRT_FANOUT="xargs -P 2 -I{} $PWD/via http" run -0 train http
	[ "$(ls answer.http.* | wc -l)" -eq $((2 * STEPS)) ]
	same http

	# lambda: the runtime loop, the invocations queued one at a time
	mkdir L Q
	echo 0 >L/n
	QUEUE=$PWD/Q "$PYTHON" "$SPIRT_ROOT/tests/lambda_api.py" L &
	PIDS="${PIDS-} $!"
	until_file L/port
	AWS_LAMBDA_RUNTIME_API=127.0.0.1:$(cat L/port) \
	    spirt-grad -F lambda -s "$PWD/lambda" -m m -b 8 -S 1 2>lambda.err &
	PIDS="${PIDS-} $!"
	SPIRT_FANOUT="xargs -P 1 -I{} $PWD/via lambda" run -0 train lambda
	[ ! -e L/violations ] || { cat L/violations; false; }
	[ "$(grep -c '^POST .*/response$' L/requests)" -eq $((2 * STEPS)) ]
	same lambda
}
