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
	cd "$BATS_TEST_TMPDIR" || return 1
	export TMPDIR="$BATS_TEST_TMPDIR"
	bnnet_require
	bnnet_files
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
	printf '%s\n' -q -m r --spec softmax:784:10 -b 16 -l 0.1 -o sgd \
	    --function "spirt-torch grad --module $PWD/net.py" \
	    --evaluate "spirt-torch eval --module $PWD/net.py"
}

# bntrain STORE STEPS [ARGS...]: one peer, 2 functions
bntrain() {
	local s=$1 n=$2 a
	shift 2
	mapfile -t a < <(bnargs)
	timeout 300 spirt-train -s "$s" "${a[@]}" -n 2 --steps "$n" \
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
	local steps=30 k rc n
	bnbase 2
	for k in ref int kil; do
		cp -r base $k
	done
	run -0 bntrain ref $steps
	moved ref $steps
	mapfile -t a < <(bnargs)
	for k in int kil; do
		sess timeout 300 spirt-train -s $k "${a[@]}" -n 2 \
		    --steps $steps --eval-every $steps >o$k 2>e$k &
		BG=$!
		until_ 600 rat $k 8
		if [ $k = int ]; then
			kill -INT "$(pgrep -P $BG -x spirt-train)"
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
		[ "$n" -ge 8 ] && [ "$n" -lt $steps ]
		run -0 bntrain $k $steps
		same ref $k $steps || fail "$k: another model or state"
	done
}
