#!/usr/bin/env bats
# 69-function-modes: every spirt-train mode with a function of one's own
# (--function, spirt-function(7)) on a data set by name made by NumPy:
# robust rules and --byzantine worker attacks, --peers over HTTP with the
# functions in a namespace of their own, --every H, --beat with a peer
# killed, and SIGINT then a rerun.  The function is fn, a script that is
# spirt-grad after it notes, in fn.samples, the samples of each gradient
# it computes: a mode that ran spirt-grad in its place, or skipped it,
# would leave (step, worker) pairs out.  Where the run is deterministic
# its model is spirt-grad's, byte for byte.  The NumPy example function
# trains under a robust rule and an attack, on the data set by name.
# Servers listen only in the test's own namespaces.

load helper
load netns

STEPS=4

teardown() {
	netns_teardown
	local p
	for p in ${BG-}; do
		kill -KILL -- -"$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null || :
	done
	# no function may outlive its driver
	pkill -9 -f "$BATS_TEST_TMPDIR/" 2>/dev/null || :
	return 0
}

# npdata SHARDS: the store base with data set mine (numpy_set's x.npy
# y.npy) in SHARDS shards, and mine-test (t.npz)
npdata() {
	numpy_set
	spirt-shard -q -s base -d mine -n "$1" --seed 1 x.npy y.npy
	spirt-shard -q -s base -d mine-test t.npz
}

# fnlog [NAME]: NAME (default fn), a gradient function that is
# spirt-grad, the samples of each gradient it computes in NAME.samples
# (SPIRT_SAMPLE_LOG: step= worker= revision= samples= lines)
fnlog() {
	local f=${1:-fn}
	cat >"$f" <<-EOF
	#!/bin/sh
	SPIRT_SAMPLE_LOG=$PWD/$f.samples exec spirt-grad "\$@"
	EOF
	chmod +x "$f"
}

# pairs LOG FROM TO WORKERS: the "step worker" pairs LOG has of steps FROM
# to TO-1 and workers WORKERS (e.g. "0 1"), each once, sorted
pairs() {
	awk -v lo="$2" -v hi="$3" -v ws=" $4 " '{
		for (i = 1; i <= NF; i++) { split($i, kv, "="); m[kv[1]] = kv[2] }
		if (m["step"] >= lo && m["step"] < hi &&
		    index(ws, " " m["worker"] " "))
			print m["step"], m["worker"]
	}' "$1" | sort -u -k1,1n -k2,2n
}

# want FROM TO WORKERS: every pair pairs should give
want() {
	local t w
	for ((t = $1; t < $2; t++)); do
		for w in $3; do echo "$t $w"; done
	done
}

# train STORE [ARGS...]: STEPS steps of the MLP on mine, 4 functions
train() {
	local s=$1
	shift
	timeout 120 spirt-train -q -s "$s" --train mine --test mine-test \
	    -m m --spec mlp:4-5-3 -n 4 -b 8 -S 1 --steps $STEPS \
	    --eval-every $STEPS "$@"
}

# same A B T: model m@T of store A is B's, byte for byte (both there)
same() {
	spirt-store -s "$1" get "model/m@$3" >a.bin &&
	    spirt-store -s "$2" get "model/m@$3" >b.bin && cmp a.bin b.bin
}

# differ A B T: both there, and not the same
differ() {
	spirt-store -s "$1" get "model/m@$3" >a.bin &&
	    spirt-store -s "$2" get "model/m@$3" >b.bin && ! cmp -s a.bin b.bin
}

# mat STORE T: the newest model m of STORE is at step T or past it
mat() {
	local n
	n=$(newest_model "$1" m)
	[ -n "$n" ] && [ "$n" -ge "$2" ]
}

@test "robust rules and every worker attack with the function: spirt-grad's model bytes, each gradient the function's, the attack on them" {
	npdata 4
	fnlog
	# (n, not i: bats's run counts with an i of its own)
	local a n=0
	for a in "-a trim:0.25" "-a median --cold" \
	    "-a trim:0.25 --byzantine 1:signflip" \
	    "-a median --byzantine 2:gauss:5" "-a norm --byzantine 0:scale:-4" \
	    "-a trim:0.25 --byzantine 3:alie" "-a cclip:1 --byzantine 1:ipm:0.5"; do
		n=$((n + 1))
		cp -r base ref$n
		cp -r base fn$n
		rm -f fn.samples
		# shellcheck disable=SC2086
		run -0 train ref$n $a
		# shellcheck disable=SC2086
		run -0 train fn$n $a --function "$PWD/fn"
		same ref$n fn$n $STEPS || fail "$a: another model than spirt-grad's"
		diff <(cut -f2- ref$n.train-m.tsv) <(cut -f2- fn$n.train-m.tsv)
		# every gradient of every step came from the function, the
		# malicious workers' too (the attack replaces them after)
		diff <(want 0 $STEPS "0 1 2 3") <(pairs fn.samples 0 $STEPS "0 1 2 3") ||
			fail "$a: not every gradient the function's"
	done
	# the attacks changed the runs: the rule's honest run differs
	cp -r base honest
	run -0 train honest -a trim:0.25 --function "$PWD/fn"
	same honest fn1 $STEPS
	differ honest fn3 $STEPS
	# labelflip is spirt-grad's own; with a function it is 64 (68-function)
	run -64 train fn1 --byzantine 1:labelflip --function "$PWD/fn"
}

@test "the NumPy example with a robust rule and an attack, and SPIRT_DATASET: it trains on mine, learns, and each worker's gradient is its own" {
	npdata 4
	cp -r base ex
	run -0 timeout 120 spirt-train -q -s ex --train mine --test mine-test \
	    -m soft --spec softmax:4:3 -n 4 -b 16 -o momentum -l 0.1 \
	    --schedule constant -S 1 --steps 20 --eval-every 20 \
	    -a trim:0.25 --byzantine 1:signflip \
	    --function "$PYTHON $SPIRT_ROOT/examples/your-function/softmax_fn.py"
	# learnt, the attack trimmed away
	# shellcheck disable=SC2016
	run -0 awk -F'\t' 'END { exit !($6 > 0.8) }' ex.train-soft.tsv
	run -0 spirt-store -s ex show grad/19/2
	assert_line origin=2
	assert_line shape=15
	# and there is no data set train it could have read instead
	run -0 spirt-store -s ex ls data/train
	assert_output ''
}

@test "SIGINT to the driver of a warm run with the function stops it and its functions; the rerun's model is an uninterrupted run's, bit for bit" {
	npdata 4
	fnlog
	cp -r base ref
	cp -r base int
	run -0 train ref --steps 300 -e 40
	# (a shell runs a background job with SIGINT ignored, and sh cannot
	# trap a signal ignored at its start: the driver gets it back)
	"$PYTHON" -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])' timeout 120 spirt-train -q -s int \
	    --train mine --test mine-test -m m --spec mlp:4-5-3 -n 4 -b 8 -S 1 \
	    --steps 300 -e 40 --eval-every 300 --function "$PWD/fn" &
	BG=$!
	until_ 600 mat int 20
	drv=$(pgrep -P $BG -x spirt-train.sh)
	# the warm functions, spirt-run's children
	pgrep -P "$(pgrep -P "$drv" -x spirt-run)" >/dev/null
	kill -INT "$drv"
	rc=0
	wait $BG || rc=$?
	BG=
	[ "$rc" -eq 130 ]
	n=$(newest_model int m)
	[ "$n" -lt 300 ]
	# its functions end with it
	until_ 50 gone "$drv"
	run -0 --separate-stderr train int --steps 300 -e 40 \
	    --function "$PWD/fn"
	# shellcheck disable=SC2154
	[ -z "$stderr" ]
	same ref int 300
	# every step's gradients came from the function, in one run or the
	# other
	diff <(want 0 300 "0 1 2 3") <(pairs fn.samples 0 300 "0 1 2 3")
}

@test "a cold function that fails on the data set by name: declared dead, its samples to the others (mine's assignment), every sample once an epoch" {
	npdata 4
	fnlog
	# fn, but worker 1 fails at step 2 (cold: one invocation each)
	cat >dies <<-EOF
	#!/bin/sh
	case " \$* " in *" -t 2 -w 1 "*) exit 1 ;; esac
	exec $PWD/fn "\$@"
	EOF
	chmod +x dies
	cp -r base d
	# (an epoch: 60 samples a shard in 8 steps of 8)
	run -0 --separate-stderr train d --cold --steps 8 --function "$PWD/dies"
	[[ "$stderr" == *"step 2: cold $PWD/dies -w 1 exited with status 1: declared dead"* ]]
	[[ "$stderr" == *"step 2: revision 1: functions 0 2 3 compute it again"* ]]
	run -0 spirt-shard -s d -d mine --list
	assert_line --partial 'revision 1'
	# worker 1 computed steps 0 and 1 only; the others all 8, and every
	# sample of the epoch was in one gradient applied (the newest
	# revision's of each step)
	diff <(printf '0 1\n1 1\n') <(pairs fn.samples 0 8 1)
	diff <(want 0 8 "0 2 3") <(pairs fn.samples 0 8 "0 2 3")
	"$PYTHON" - fn.samples <<-'PY'
	import collections, sys
	by = collections.defaultdict(dict)
	for line in open(sys.argv[1]):
	    m = dict(kv.split("=", 1) for kv in line.split())
	    by[int(m["step"])][m["worker"]] = m
	seen = collections.Counter()
	for t, ws in by.items():
	    top = max(int(m["revision"]) for m in ws.values())
	    for m in ws.values():
	        if int(m["revision"]) == top:
	            seen.update(m["samples"].split(","))
	want = {"%d:%d" % (k, i) for k in range(4) for i in range(60)}
	assert set(seen) == want and max(seen.values()) == 1, \
	    (len(want - set(seen)), max(seen.values()))
	PY
}

# gone DRIVER: no fn and no child of DRIVER is left
gone() {
	! pgrep -f "$PWD/fn" >/dev/null && ! pgrep -P "$1" >/dev/null
}

# lpeers P: P local peers of one run (keys p0.key..., peers naming their
# stores s0...), each store a copy of base
lpeers() {
	local i
	: >peers
	for ((i = 0; i < $1; i++)); do
		spirt-peer keygen p$i.key >/dev/null
		echo "p$i $PWD/s$i" >>peers
	done
}

# ptrain I [ARGS...]: peer I's driver on mine, 2 functions (the functions'
# logs are fnI.samples when ARGS give --function fnI)
ptrain() {
	local i=$1
	shift
	SPIRT_KEY=p$i.key SPIRT_ID=p$i SPIRT_RUN=r1 exec timeout 300 \
	    spirt-train -s "s$i" --train mine --test mine-test -m m \
	    --spec mlp:4-5-3 -n 2 -b 8 -S 1 --peers peers --peer "$i" \
	    --deadline 60000 "$@"
}

@test "--every 3, three peers: with the function, the models of spirt-grad's run at the end, bit for bit; every gradient the function's" {
	npdata 6
	lpeers 3
	local i k steps=12
	for k in ref fn; do
		for i in 0 1 2; do
			rm -rf s$i
			cp -r base s$i
			fnlog fn$i
			if [ $k = fn ]; then
				ptrain $i --every 3 --steps $steps --eval-every $steps \
				    --function "$PWD/fn$i" >o$i 2>e$i &
			else
				ptrain $i --every 3 --steps $steps --eval-every $steps \
				    >o$i 2>e$i &
			fi
			pid[i]=$!
		done
		BG="${pid[*]}"
		wait "${pid[0]}" && wait "${pid[1]}" && wait "${pid[2]}" ||
			{ cat e0 e1 e2 >&2; false; }
		BG=
		for i in 0 1 2; do
			spirt-store -s s$i get model/m@$steps >$k.$i
		done
		cmp $k.0 $k.1
		cmp $k.0 $k.2
	done
	cmp ref.0 fn.0
	# (the reference run left no samples: it ran spirt-grad itself)
	for i in 0 1 2; do
		diff <(want 0 $steps "$((2 * i)) $((2 * i + 1))") \
		    <(pairs fn$i.samples 0 $steps "$((2 * i)) $((2 * i + 1))")
	done
}

@test "--beat with the function: a peer killed mid-run is left out, the others go on with its samples, computed by the function; one model" {
	npdata 6
	lpeers 3
	local i steps=200
	for i in 0 1 2; do
		cp -r base s$i
		fnlog fn$i
		ptrain $i --beat 200 --steps $steps -e 40 --eval-every $steps \
		    --function "$PWD/fn$i" >o$i 2>e$i &
		pid[i]=$!
	done
	BG="${pid[*]}"
	# p1 stops (its beats with it) once under way, then is killed
	until_ 600 mat s1 10
	stop_dead "${pid[1]}" p1 e0
	k=$(newest_model s1 m)
	wait "${pid[0]}" || { cat e0 >&2; false; }
	wait "${pid[2]}" || { cat e2 >&2; false; }
	BG=
	same s0 s2 $steps
	grep -q 'peers p1 out of the round' e0
	# p0's and p2's functions computed every step, and after p1 was
	# left out, under a later revision, with p1's samples among theirs
	for i in 0 2; do
		diff <(want 0 $steps "$((2 * i)) $((2 * i + 1))") \
		    <(pairs fn$i.samples 0 $steps "$((2 * i)) $((2 * i + 1))")
	done
	awk -v k="$k" '{ for (i = 1; i <= NF; i++) { split($i, kv, "=")
		m[kv[1]] = kv[2] } }
		m["step"] > k + 5 && m["revision"] > 0 { n++ }
		END { exit !n }' fn0.samples
}

@test "--peers over HTTP, two peers in namespaces of their own, their warm functions in a third through their URLs: spirt-grad's model bytes" {
	netns_require
	netns_setup 3
	npdata 4
	local i k port=7070
	spirt-peer keygen -p group.pub group.key >/dev/null
	: >peers
	for i in 1 2; do
		spirt-peer keygen p$i.key >p$i.hex
		spirt-peer invite -o p$i.tok -g group.key -i p$i -r r1 \
		    "$(cat p$i.hex)"
		echo "p$i http://$(netns_addr $i):$port" >>peers
		# peer I's functions, workers 2(I-1) and 2(I-1)+1: their id
		# binds them
		spirt-peer keygen f$i.key >f$i.hex
		spirt-peer invite -o f$i.tok -R function -g group.key \
		    -i p$i.w$((2 * i - 2))-$((2 * i - 1)) -r r1 "$(cat f$i.hex)"
		fnlog fn$i
	done
	for k in ref fn; do
		for i in 1 2; do
			rm -rf s$i
			cp -r base s$i
			f=()
			[ $k = ref ] || f=(--function "ip netns exec $(netns_name 3) env SPIRT_STORE=http://$(netns_addr $i):$port SPIRT_KEY=$PWD/f$i.key SPIRT_TOKEN=$PWD/f$i.tok SPIRT_GROUP=$PWD/group.pub $PWD/fn$i")
			netns_exec $i env SPIRT_KEY="$PWD/p$i.key" \
			    SPIRT_TOKEN="$PWD/p$i.tok" SPIRT_GROUP="$PWD/group.pub" \
			    timeout 300 spirt-train -q -s "$PWD/s$i" \
			    --train mine --test mine-test -m m --spec mlp:4-5-3 \
			    -n 2 -b 8 -S 1 --peers "$PWD/peers" --peer $((i - 1)) \
			    --steps 6 --eval-every 6 --deadline 60000 "${f[@]}" \
			    >o$k$i 2>e$k$i &
			pid[i]=$!
		done
		BG="${pid[*]}"
		wait "${pid[1]}" || { cat e${k}1 >&2; false; }
		wait "${pid[2]}" || { cat e${k}2 >&2; false; }
		BG=
		same s1 s2 6
		spirt-store -s s1 get model/m@6 >$k.bin
	done
	cmp ref.bin fn.bin
	# each peer's functions computed its workers' gradients, every step,
	# in host 3 (none ran in the peers' hosts: the reference left none)
	diff <(want 0 6 "0 1") <(pairs fn1.samples 0 6 "0 1")
	diff <(want 0 6 "2 3") <(pairs fn2.samples 0 6 "2 3")
	# through the peers' URLs: each served its functions, at least a
	# read and a write a gradient more than the peer alone, none refused
	for i in 1 2; do
		r=$(sed -n 's/^spirt-peer: stopped: \([0-9]*\) served, 0 refused$/\1/p' eref$i)
		n=$(sed -n 's/^spirt-peer: stopped: \([0-9]*\) served, 0 refused$/\1/p' efn$i)
		[ -n "$r" ] && [ -n "$n" ] && [ "$n" -ge $((r + 2 * 2 * 6)) ] ||
			fail "peer $i served $n requests with the functions, $r without"
	done
}
