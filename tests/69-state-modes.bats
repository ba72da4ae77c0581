#!/usr/bin/env bats
# 69-state-modes: every spirt-train mode with a brought function of a model
# with state (spirt-model(5)): the BatchNorm module of tests/bnnet.bash
# through "spirt-torch grad", its buffers mstate/r@t beside model/r@t.
# SIGINT, and SIGKILL to the whole run mid-step, then the same command:
# the model and its state of an uninterrupted run, byte for byte.  Three
# peers on store paths with --beat, one killed: the others go on with one
# model and one state; the same command brings it back, and it catches up
# the model and the state.  --every 2: one model and one state on every
# peer.  A robust rule over the functions (-a median) with a function
# attack, and across peers (--peer-rule median) with an equivocating
# peer: the honest peers hold one model and one state.  Each test also
# checks that the state moved from mstate/r@0, so that a mode that
# dropped it (the state of step 0 carried along, or none) fails.

load helper
load bnnet

setup() {
	bnnet_setup
}

teardown() {
	local p
	# (each a process group of its own: the driver and its functions)
	for p in ${BG-}; do
		kill -KILL -- -"$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null || :
	done
	return 0
}

# bnbase SHARDS: the store base with X.npy y.npy in SHARDS shards, the
# test set, and model r@0 of net.py (seed 1); z.rec its state mstate/r@0
bnbase() {
	spirt-shard -s base -q -n "$1" --seed 1 X.npy y.npy
	spirt-shard -s base -q -d test tX.npy ty.npy
	spirt-torch init -s base -q -m r --module net.py -S 1
	spirt-store -s base get -f mstate/r@0 >z.rec
}

# bnargs: the arguments of a run of net.py through spirt-torch, warm
bnargs() {
	printf '%s\n' -m r --spec softmax:784:10 -b 16 -l 0.1 -o sgd \
	    --function "spirt-torch grad --module $PWD/net.py" \
	    --evaluate "spirt-torch eval --module $PWD/net.py"
}

# bntrain STORE STEPS [ARGS...]: one peer, 2 functions
bntrain() {
	local s=$1 n=$2 a
	shift 2
	mapfile -t a < <(bnargs)
	timeout 300 spirt-train -q -s "$s" "${a[@]}" -n 2 --steps "$n" \
	    --eval-every "$n" "$@"
}

# sess CMD...: CMD in a session of its own (a process group the test can
# kill whole), SIGINT as at a terminal (a shell's background job has it
# ignored, and sh cannot trap a signal ignored at its start)
sess() {
	exec "$PYTHON" -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.setsid()
os.execvp(sys.argv[1], sys.argv[1:])' "$@"
}

# rat STORE T: the newest model r of STORE is at step T or past it
rat() {
	local n
	n=$(newest_model "$1" r)
	[ -n "$n" ] && [ "$n" -ge "$2" ]
}

# same A B T: model/r@T and mstate/r@T of store A are B's, byte for byte
same() {
	local k
	for k in model/r@$3 mstate/r@$3; do
		spirt-store -s "$1" get "$k" >a.bin &&
		    spirt-store -s "$2" get "$k" >b.bin && cmp a.bin b.bin ||
		    return 1
	done
}

# moved STORE T: mstate/r@T of STORE is there, of step T, and its values
# are not those of mstate/r@0 (z.rec)
moved() {
	spirt-store -s "$1" get -f "mstate/r@$2" >m.rec || return 1
	"$PYTHON" - "$2" <<-PY
	import sys
	import numpy as np
	sys.path.insert(0, "$BATS_TEST_DIRNAME/../python")
	from spirt import tensor
	def rec(p):
	    with open(p, "rb") as f:
	        return tensor.read_record(f)
	m, z = rec("m.rec"), rec("z.rec")
	assert m.step == int(sys.argv[1]) and m.array.size == 16, m
	assert np.abs(m.array - z.array).max() > 1e-3, "the state of step 0"
	PY
}

@test "state modes: SIGINT, and SIGKILL to the whole run mid-step, then the same command: model and state of an uninterrupted run, bit for bit" {
	# A step of this small module takes 5-30 ms, less than a poll of the
	# store on a loaded machine: a run of 30 steps signalled at step 8
	# once finished first (CI), one of 100 at step 4 too (the sanitizer
	# build, two tests at a time).  Here each forward pass sleeps 50 ms
	# (a hook: the same parameters, the same bits), so the signal lands
	# with about 2.5 s of the run's 60 steps still to go.
	local steps=60 k rc n
	bnbase 2
	cat >>net.py <<-'PY'

	import time as _time
	_model = model


	def model():
	    m = _model()
	    m.register_forward_pre_hook(lambda mod, inp: _time.sleep(0.05))
	    return m
	PY
	for k in ref int kil; do
		cp -r base $k
	done
	run -0 bntrain ref $steps -e 4
	moved ref $steps
	mapfile -t a < <(bnargs)
	for k in int kil; do
		sess timeout 300 spirt-train -q -s $k "${a[@]}" -n 2 \
		    -e 4 --steps $steps --eval-every $steps >o$k 2>e$k &
		BG=$!
		until_ 600 rat $k 4
		if [ $k = int ]; then
			kill -INT "$(pgrep -P $BG -x spirt-train.sh)"
		else
			kill -KILL -- -$BG
		fi
		rc=0
		wait $BG || rc=$?
		BG=
		if [ $k = int ]; then
			[ "$rc" -eq 130 ] || fail "SIGINT: status $rc: $(cat e$k)"
		fi
		n=$(newest_model $k r)
		[ -n "$n" ] && [ "$n" -ge 4 ] && [ "$n" -lt $steps ] ||
			fail "$k: newest model/r '$n' after the signal: $(
			    spirt-store -s $k ls model/ 2>&1 | cut -f1 |
			    tr '\n' ' '); $(cat e$k)"
		run -0 bntrain $k $steps -e 4
		same ref $k $steps || fail "$k: another model or state"
	done
}

@test "state modes: -a median over the functions with a function attack (1:signflip): the state of each step is the median of the functions' states" {
	local steps=4
	bnbase 3
	cp -r base s
	run -0 bntrain s $steps -n 3 -a median --byzantine 1:signflip
	moved s $steps
	t=$((steps - 1))
	spirt-store -s s get -f mstate/r@$steps >m.rec
	for w in 0 1 2; do
		spirt-store -s s get -f state/$t/$w >st$w.rec
	done
	# (a mean would be another: the three differ, each batch its own;
	# and the malicious function's state is flipped too, its running
	# variances (4..7 and 12..15 of each state) below 0, which the
	# median keeps out)
	run "$PYTHON" - <<-PY
	from ref import *
	m = rec("m.rec")
	ws = np.stack([rec("st%d.rec" % w).array for w in range(3)])
	assert m.step == $steps and ws.shape == (3, 16)
	d = float(np.abs(m.array - np.median(ws, axis=0)).max())
	e = float(np.abs(m.array - ws.mean(axis=0)).max())
	print("median", d, "mean", e)
	assert d <= 1e-6 and e > 1e-4
	v = np.r_[4:8, 12:16]
	assert (ws[1, v] < 0).all() and (ws[[0, 2]][:, v] > 0).all(), ws
	assert (m.array[v] > 0).all()
	PY
	echo "$output"; [ "$status" -eq 0 ]
	assert_line --regexp '^median '
}

# lpeers P: P local peers p0... of one run (keys pI.key, the peers file
# naming their stores sI), each store a copy of base
lpeers() {
	local i
	: >peers
	for ((i = 0; i < $1; i++)); do
		spirt-peer keygen p$i.key >/dev/null
		echo "p$i $PWD/s$i" >>peers
		rm -rf s$i
		cp -r base s$i
	done
}

# ptrain I [ARGS...]: peer I's driver of net.py, one function, a
# process group of its own (timeout's)
ptrain() {
	local i=$1 a
	shift
	mapfile -t a < <(bnargs)
	SPIRT_KEY=p$i.key SPIRT_ID=p$i SPIRT_RUN=r1 exec timeout 300 \
	    spirt-train -s "s$i" "${a[@]}" -n 1 --peers peers --peer "$i" \
	    --deadline 60000 "$@"
}

# pwait I...: peers I... end well
pwait() {
	local i
	for i; do
		wait "${pid[i]}" || fail "peer $i: $(cat "e$i")"
	done
}

@test "state modes: --every 2, three peers: one model and one state on every peer" {
	local i steps=6
	bnbase 3
	lpeers 3
	for i in 0 1 2; do
		ptrain $i --every 2 --steps $steps --eval-every $steps >o$i 2>e$i &
		pid[i]=$!
	done
	BG="${pid[*]}"
	pwait 0 1 2
	BG=
	same s0 s1 $steps
	same s0 s2 $steps
	moved s0 $steps
	# (a local step's state is each peer's own: the outer step combines)
	spirt-store -s s0 get mstate/r@$((steps - 1)) >l0.bin
	spirt-store -s s1 get mstate/r@$((steps - 1)) >l1.bin
	run ! cmp -s l0.bin l1.bin
}

@test "state modes: --peer-rule median, an equivocating peer (peer:equivocate:scale:-5): the three honest peers hold one model and one state" {
	local i steps=5
	bnbase 4
	lpeers 4
	# p2 pulls p3's other story: s3.fork
	sed "s,$PWD/s3\$,$PWD/s3.fork," peers >peers2
	for i in 0 1 2 3; do
		b=() pf=peers
		[ $i -ne 3 ] || b=(--byzantine peer:equivocate:scale:-5)
		[ $i -ne 2 ] || pf=peers2
		ptrain $i --steps $steps --eval-every $steps --peer-rule median \
		    --peers $pf "${b[@]}" >o$i 2>e$i &
		pid[i]=$!
	done
	BG="${pid[*]}"
	pwait 0 1 2 3
	BG=
	same s0 s1 $steps
	same s0 s2 $steps
	moved s0 $steps
	# p3 was found out, and left out
	run -0 sh -c "spirt-store -s s0 get gagg/$((steps - 1))/round | tr -c '[:print:]\n' ' '"
	assert_output --partial "peer=p3 equivocated"
	run ! same s0 s3 $steps
}

@test "state modes: --beat, three peers, one killed mid-run: the others go on with one model and one state; the same command brings it back, and it catches up model and state" {
	local i k steps=50
	bnbase 3
	lpeers 3
	for i in 0 1 2; do
		ptrain $i --beat 200 --steps $steps --eval-every $steps \
		    >o$i 2>e$i &
		pid[i]=$!
	done
	BG="${pid[*]}"
	# p1 stops (its beats with it) once under way, then is killed
	until_ 600 rat s1 6
	stop_dead "${pid[1]}" p1 e0
	k=$(newest_model s1 r)
	# the others went on without it
	until_ 300 rat s0 $((k + 4))
	grep -q 'peers p1 out of the round' e0
	# the same command: it catches up (before the others' end, or after)
	mv e1 e1.killed
	ptrain 1 --beat 200 --steps $steps --eval-every $steps >o1 2>e1 &
	pid[1]=$!
	BG="${pid[*]}"
	pwait 0 2 1
	BG=
	# (the run's 5 epochs: it joins at an epoch's first step, or at
	# the end, with the last model)
	grep -q 'caught up from' e1 || fail "$(cat e1)"
	same s0 s2 $steps
	same s0 s1 $steps
	moved s0 $steps
}
