#!/usr/bin/env bats
# 95-examples: every examples/*/run.sh runs to completion (on small data)

load helper
load bnnet

teardown() {
	# (a test's session, if it made one: nothing of it stays)
	[ -z "${SID:-}" ] || pkill -KILL -s "$SID" 2>/dev/null
	:
}

@test "examples/numpy-store" {
	run -0 sh "$SPIRT_ROOT/examples/numpy-store/run.sh" "$PWD/w"
	assert_output --partial 'round trip: identical float32 (128, 10)'
	assert_output --partial 'corrupted record refused with exit 65'
}

@test "examples/your-model: a residual BatchNorm net of PyTorch on NumPy arrays, the median of three functions, learns; its state moved" {
	bnnet_require
	run -0 env STEPS=50 FMNIST="$FMNIST" sh "$SPIRT_ROOT/examples/your-model/run.sh" "$PWD/w"
	assert_line --regexp '^step 25: test accuracy 0\.[0-9]{4}$'
	# 10 classes: chance is 0.1; it passes 0.6 by step 50
	run -0 awk -F'\t' 'NR > 1 && $2 == 50 { a = $6 }
		END { exit !(a >= 0.6) }' w/own.db.train-res.tsv
	# the module's 5,202 parameters, its 48 BatchNorm statistics, which
	# the steps moved from model@0's
	run -0 spirt-store -s w/own.db show model/res@50
	assert_line shape=5202
	assert_line --regexp '^name=torch:net:5202$'
	run -0 spirt-store -s w/own.db show mstate/res@50
	assert_line shape=48
	[ "$(spirt-store -s w/own.db get mstate/res@0 | md5sum)" != \
	    "$(spirt-store -s w/own.db get mstate/res@50 | md5sum)" ]
}

@test "examples/your-function: a Python function in spirt-grad's place, warm and cold" {
	run -0 env STEPS=20 sh "$SPIRT_ROOT/examples/your-function/run.sh" "$PWD/w"
	# each run well above chance (1/3)
	for s in warm cold grad; do
		run -0 awk -F'\t' 'NR > 1 && $6 != "-" { a = $6 }
			END { exit !(a >= 0.85) }' "w/$s.db.train-soft.tsv"
	done
	# the function's gradients: the model's 15 parameters, its worker's
	# slot, the assignment's revision
	run -0 spirt-store -s w/cold.db show grad/19/1
	assert_line shape=15
	assert_line origin=1
	assert_line revision=0
	assert_line name=softmax:4:3
	run -0 spirt-store -s w/warm.db show grad/19/0
	assert_line origin=0
}

fmnist_or_skip() {
	[ -r "$FMNIST/train-images-idx3-ubyte.gz" ] ||
		skip "no Fashion-MNIST (Debian package dataset-fashion-mnist)"
}

@test "examples/fashion-mnist" {
	fmnist_or_skip
	run -0 env STEPS=20 EVERY=10 sh "$SPIRT_ROOT/examples/fashion-mnist/run.sh" "$PWD/w"
	# two evaluations in the log, the last far above chance (0.1)
	run -0 awk -F'\t' 'NR > 1 && $6 != "-" { n++; a = $6 }
		END { exit !(n == 2 && a > 0.6) }' w/fmnist.db.train-mlp.tsv
	run -0 sh -c 'spirt-store -s w/fmnist.db ls grad/20/ | wc -l'
	assert_output 4
	run -0 spirt-store -s w/fmnist.db ls model/
	assert_line --partial 'model/mlp@21'
	# the step by hand and the driver's agree to the byte
	[ "$(spirt-store -s w/fmnist.db get model/mlp@21 | cksum)" = \
	  "$(spirt-store -s w/copy.db get model/mlp@21 | cksum)" ]
}

@test "examples/pure-pipe" {
	fmnist_or_skip
	run -0 env STEPS=10 EVERY=5 sh "$SPIRT_ROOT/examples/pure-pipe/run.sh" "$PWD/w"
	assert_line --regexp '^step +0  test loss '
	assert_line 'step=10'
	# no store anywhere
	[ ! -e w/spirt.db ] && [ ! -e spirt.db ]
	# the test loss falls at each evaluation; accuracy well above chance
	run -0 awk '/^step / { if (n++ && $5 >= l) bad = 1; l = $5; a = $7 }
		END { exit !(n == 3 && !bad && a > 0.5) }' <<<"$output"
}

@test "examples/tabular-softmax: heart_scale (LIBSVM)" {
	[ -r /usr/share/doc/liblinear-tools/examples/heart_scale ] ||
		skip "no heart_scale (Debian package liblinear-tools)"
	run -0 sh "$SPIRT_ROOT/examples/tabular-softmax/run.sh" "$PWD/w"
	assert_line --partial '(LIBSVM)'
	assert_line 'samples=54'
	assert_line 'majority-class baseline=0.6296'
	# clearly better than always guessing the majority class
	run -0 awk -F= '$1 == "accuracy" { exit !($2 >= 0.75) }' <<<"$output"
}

@test "examples/tabular-softmax: synthetic CSV" {
	run -0 env DATA=synthetic sh "$SPIRT_ROOT/examples/tabular-softmax/run.sh" "$PWD/w"
	assert_line --partial '(CSV)'
	assert_line 'samples=60'
	assert_line 'majority-class baseline=0.3333'
	run -0 awk -F= '$1 == "accuracy" { exit !($2 >= 0.85) }' <<<"$output"
	# the generator is deterministic: the same table every run
	run -0 sh -c 'cksum < w/train.csv'
	assert_output '3009668909 8543'
}

@test "examples/cron: two ticks resume; a tick while one runs does nothing; the model of one run" {
	fmnist_or_skip
	run -0 env STEPS=3 sh "$SPIRT_ROOT/examples/cron/run.sh" "$PWD/w"
	assert_line --regexp '^cron: .*: steps 0 to 3$'
	# a tick while the last run holds the lock
	flock w/train.lock sh -c 'STEPS=3 sh "$1/examples/cron/run.sh" "$2"' \
	    tick "$SPIRT_ROOT" "$PWD/w" >held.out 2>&1
	grep -q "^cron: .*: the last run still holds $PWD/w/train.lock; nothing done$" held.out
	run -0 spirt-store -s w/train.db ls model/
	refute_output --partial 'model/mlp@6'
	run -0 env STEPS=3 sh "$SPIRT_ROOT/examples/cron/run.sh" "$PWD/w"
	assert_line --regexp '^cron: .*: steps 3 to 6$'
	# one run of the six steps: the same model
	spirt-train -q -s one.db -n 2 -b 32 --steps 6 --eval-every 3
	[ "$(spirt-store -s w/train.db get model/mlp@6 | cksum)" = \
	  "$(spirt-store -s one.db get model/mlp@6 | cksum)" ]
}

@test "examples/parallel-ssh: on this machine (sshlogin :)" {
	fmnist_or_skip
	command -v parallel >/dev/null || skip "no parallel (Debian package parallel)"
	run -0 env STEPS=2 sh "$SPIRT_ROOT/examples/parallel-ssh/run.sh" "$PWD/w"
	assert_line '  : exit 0: 6'
	assert_line --regexp '^model/mlp@2: parallel and xargs identical \([0-9]+ [0-9]+\)$'
}

@test "examples/parallel-ssh: killed outright once it serves, it leaves no server behind" {
	fmnist_or_skip
	command -v parallel >/dev/null || skip "no parallel (Debian package parallel)"
	# (a run long enough to be killed in; its own session, to find all)
	env STEPS=1000 setsid sh "$SPIRT_ROOT/examples/parallel-ssh/run.sh" \
	    "$PWD/w" >out 2>err &
	SID=$!
	until_ 600 grep -q '^serving ' out || { cat err >&2; false; }
	srv=$(pgrep -f -s "$SID" 'spirt-peer serve') || { cat err >&2; false; }
	kill -KILL "$SID"
	# (SPIRT_PARENT: the kernel TERMs it once the script is gone; a
	# zombie left to init counts as gone)
	until_ 100 sh -c "ps -o stat= -p $srv | grep -qv '^Z' && exit 1; exit 0" ||
		{ ps -o pid,ppid,stat,args -s "$SID" >&2; false; }
}

# examples/slurm needs a cluster: tests/64-slurm.bats makes one and runs it
