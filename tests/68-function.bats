#!/usr/bin/env bats
# 68-function: a user's gradient and evaluation functions in spirt-grad's
# and spirt-eval's places (spirt-train --function, --evaluate,
# SPIRT_FUNCTION, SPIRT_EVALUATE; spirt-function(7)): warm, cold, through
# SPIRT_FANOUT and a peer's URL, the arguments they get, and what
# spirt-train does with one that breaks the contract; spirt-conform passes
# spirt-grad and the example and fails bad functions, naming the check.
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
	# no function may outlive its driver
	pkill -9 -f "$BATS_TEST_TMPDIR/" 2>/dev/null || :
}

# train STORE [ARGS...]: the training, the same every time
train() {
	local s=$1
	shift
	timeout 120 spirt-train -q -m m --spec mlp:4-5-3 -n 2 -b 8 -S 1 \
	    --steps $STEPS --eval-every $STEPS -s "$s" "$@"
}

# wrapper NAME TOOL: NAME, a function that logs its arguments, one line an
# invocation, to NAME.log, drops its own first argument and runs TOOL
wrapper() {
	cat >"$1" <<-EOF
	#!/bin/sh
	echo "\$*" >>"$PWD/$1.log"
	shift
	exec $2 "\$@"
	EOF
	chmod +x "$1"
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

@test "--function CMD warm: CMD's own words, then spirt-grad --serve's arguments; the model bytes of spirt-grad" {
	csvbase
	cp -r base ref
	cp -r base sfn
	cp -r base env
	wrapper fn spirt-grad
	run -0 train ref
	# (a word of CMD is never globbed: * stays *)
	run -0 train sfn --function "$PWD/fn *"
	same sfn
	run -0 sort fn.log
	assert_output "$(printf '* -q --serve -m m -w %s -b 8 -S 1\n' 0 1)"
	# SPIRT_FUNCTION when no option; the option over it
	rm fn.log
	SPIRT_FUNCTION="$PWD/fn x" run -0 train env
	same env
	[ "$(wc -l <fn.log)" -eq 2 ]
	cp -r base opt
	SPIRT_FUNCTION=/nonexistent run -0 train opt --function "$PWD/fn y"
	same opt
	grep -q '^y -q --serve' fn.log
}

@test "--function CMD --cold: one CMD a function and step, spirt-grad's cold arguments; the model bytes of spirt-grad" {
	csvbase
	cp -r base ref
	cp -r base sfn
	wrapper fn spirt-grad
	run -0 train ref --cold
	run -0 train sfn --cold --function "$PWD/fn own"
	same sfn
	[ "$(wc -l <fn.log)" -eq $((2 * STEPS)) ]
	grep -qx 'own -q -m m -t 2 -w 1 -b 8 -S 1' fn.log
}

# serve STORE: peer p1 serving STORE on 127.0.0.1 (its pid in PIDS), and
# FAN, a SPIRT_FANOUT whose functions reach it with p1.w0-1's credentials
serve() {
	[ -e group.key ] || group_keys p1.w0-1
	rm -f ready
	mkfifo ready
	timeout -k 10 120 spirt-peer serve -s "$PWD/$1" -k p1.key -T p1.tok \
	    -g group.pub -l 127.0.0.1:0 -F 3 3>ready 2>srv.log &
	PIDS=$!
	read -r -t 30 addr <ready
	FAN="xargs -P 2 -I{} env SPIRT_STORE=http://$addr SPIRT_KEY=$PWD/f1.key SPIRT_TOKEN=$PWD/f1.tok SPIRT_GROUP=$PWD/group.pub"
}

# served N: the server stopped, it served at least N requests, none
# refused
served() {
	kill -TERM "$PIDS"
	wait "$PIDS"
	PIDS=
	run -0 sed -n 's/^spirt-peer: stopped: \([0-9]*\) served, 0 refused$/\1/p' \
	    srv.log
	[ "$output" -ge "$1" ]
}

@test "--function CMD through SPIRT_FANOUT and a peer's URL: the model bytes of spirt-grad; the example function there too" {
	csvbase
	cp -r base ref
	cp -r base s1
	cp -r base s2
	wrapper fn spirt-grad
	run -0 train ref --cold
	serve s1
	SPIRT_FANOUT=$FAN run -0 train s1 --cold --function "$PWD/fn url"
	same s1
	[ "$(grep -c '^url -q -m m -t [0-9] -w [01] -b 8 -S 1$' fn.log)" -eq $((2 * STEPS)) ]
	# the gradients went through the URL, none refused
	served $((2 * STEPS))
	# the example reads its model and batch and writes its gradient
	# through the URL as well
	serve s2
	SPIRT_FANOUT=$FAN run -0 train s2 --cold --spec softmax:4:3 \
	    --function "$PYTHON $SPIRT_ROOT/examples/your-function/softmax_fn.py"
	run -0 spirt-store -s s2 show grad/$((STEPS - 1))/1
	assert_line origin=1
	assert_line shape=15
	served $((3 * 2 * STEPS))
}

@test "--evaluate CMD: CMD's own words, then spirt-eval's arguments; SPIRT_EVALUATE; the option over it" {
	csvbase
	cp -r base ref
	cp -r base sev
	cp -r base env
	wrapper ev spirt-eval
	run -0 train ref
	run -0 train sev --evaluate "$PWD/ev mine"
	same sev
	run -0 cat ev.log
	assert_output "mine -q -m m -t $STEPS"
	SPIRT_EVALUATE=/nonexistent run -0 train env --evaluate "$PWD/ev x"
	same env
	cp -r base env2
	SPIRT_EVALUATE="$PWD/ev y" run -0 train env2
	same env2
	run -0 cut -d' ' -f1 ev.log
	assert_output "$(printf 'mine\nx\ny')"
}

@test "--evaluate CMD that fails, says no accuracy or hangs: 75, named, the steps before it kept" {
	csvbase
	cp -r base a
	printf '#!/bin/sh\necho "bad eval" >&2\nexit 3\n' >fail
	printf '#!/bin/sh\necho loss=1\necho accuracy=x\n' >junk
	printf '#!/bin/sh\nexec sleep 60\n' >hang
	chmod +x fail junk hang
	run -75 train a --evaluate "$PWD/fail"
	assert_line "spirt-train: step $STEPS: $PWD/fail exited with status 3; rerun to resume"
	run -0 newest_model a m
	assert_output $STEPS
	cp -r base b
	run -75 train b --evaluate "$PWD/junk"
	assert_line "spirt-train: step $STEPS: $PWD/junk: expected loss=L and accuracy=A lines (A from 0 to 1); rerun to resume"
	cp -r base c
	run -75 train c --evaluate "$PWD/hang" --deadline 1000
	assert_line "spirt-train: step $STEPS: $PWD/hang: no answer within --deadline 1000 ms; rerun to resume"
}

@test "--function, --evaluate: an empty command is 64, one not found 69, labelflip only spirt-grad's, before any work" {
	run -64 spirt-train -q -s new.db --function ' '
	assert_output 'spirt-train: --function: an empty command'
	SPIRT_EVALUATE= run -64 spirt-train -q -s new.db --evaluate ''
	assert_output 'spirt-train: --evaluate: an empty command'
	run -69 spirt-train -q -s new.db --function '/nonexistent/fn -x'
	assert_output --regexp '^spirt-train: --function /nonexistent/fn -x: /nonexistent/fn: not found beside spirt-train \(.*\) or on PATH$'
	SPIRT_EVALUATE=nonexistent-eval run -69 spirt-train -q -s new.db
	assert_output --regexp '^spirt-train: SPIRT_EVALUATE nonexistent-eval: nonexistent-eval: not found'
	run -64 spirt-train -q -s new.db --function spirt-eval \
	    --byzantine 1:labelflip
	assert_output "spirt-train: --byzantine 1:labelflip: labelflip is spirt-grad's --label-flip, not --function spirt-eval's"
	[ ! -e new.db ]
}

# ---- spirt-conform, and spirt-train with functions that break the
# contract ----

# badpy NAME SED: NAME.py, examples/your-function/softmax_fn.py edited by
# the sed script SED (a function that keeps the contract but there)
badpy() {
	sed "$2" "$SPIRT_ROOT/examples/your-function/softmax_fn.py" >"$1.py"
	! cmp -s "$1.py" "$SPIRT_ROOT/examples/your-function/softmax_fn.py"
	export PYTHONPATH="$SPIRT_ROOT/contrib/python"
}
# the gradient line of softmax_fn.py, and its record's origin
GLINE='/^    g, loss = gradient(/a\'
ORIGIN='s/step=step, origin=worker,/step=step, origin=worker + 1,/'

# stub NAME BODY: NAME, a sh function whose body is BODY, then spirt-grad
stub() {
	printf '#!/bin/sh\n%s\nexec spirt-grad "$@"\n' "$2" >"$1"
	chmod +x "$1"
}

@test "spirt-conform: spirt-grad and the example pass every check, warm and cold" {
	run -0 spirt-conform spirt-grad
	[ "${#lines[@]}" -eq 13 ]
	refute_output --partial 'not ok'
	assert_line 'ok 4 - warm: spirt-agg takes the step'"'"'s gradients'
	assert_line --partial 'ok 13 - cold: killed during an invocation'
	run -0 spirt-conform --cold "$PYTHON" \
	    "$SPIRT_ROOT/examples/your-function/softmax_fn.py"
	[ "${#lines[@]}" -eq 5 ]
	refute_output --partial 'not ok'
	run -0 spirt-conform -q --warm spirt-grad
	assert_output ''
	# its own data and model: a store's data set, another spec
	awk 'BEGIN { for (i = 0; i < 40; i++) printf "%d,%d,%d\n", i % 2, i % 2, i % 3 }' >t.csv
	spirt-shard -s d.db -q -n 3 t.csv
	run -0 spirt-conform --data d.db --spec mlp:2-4-2 spirt-grad
	assert_line --partial 'the model'"'"'s 22 floats'
}

@test "spirt-conform: a function that answers junk, writes NaN, writes another worker's origin or hangs fails, the check named" {
	printf '#!/bin/sh\nwhile read -r l; do echo ok; done\n' >junk
	chmod +x junk
	run -1 spirt-conform --warm ./junk
	assert_line 'not ok 1 - warm: answers "0" with step=0 worker=0 samples=8 loss=L: answered "ok"'
	assert_line --partial 'not ok 2 - warm: writes grad/0/0, the model'"'"'s 15 floats, its metadata right: no grad/0/0 in the store'
	assert_line --regexp '^not ok 5 - warm: junk lines answered error=64.*: answered "ok" to "1x"$'
	assert_line --regexp '^spirt-conform: [0-9]+ of 8 checks failed'

	badpy nan "$GLINE"'
    g[0] = np.nan'
	run -1 spirt-conform "$PYTHON" nan.py
	assert_line "not ok 2 - warm: writes grad/0/0, the model's 15 floats, its metadata right: 1 NaN and 0 Inf values"
	assert_line --regexp "^not ok 4 - warm: spirt-agg takes the step's gradients: spirt-agg refuses them \(65\): "
	assert_line --regexp "^not ok 9 - cold: .*: 1 NaN and 0 Inf values$"

	badpy other "$ORIGIN"
	run -1 spirt-conform "$PYTHON" other.py
	assert_line "not ok 2 - warm: writes grad/0/0, the model's 15 floats, its metadata right: origin 1, not worker 0"
	assert_line --regexp "^not ok 4 - warm: spirt-agg takes the step's gradients: spirt-agg refuses them \(65\): .*origin 1, not the key's worker 0"

	printf '#!/bin/sh\nexec sleep 600\n' >hang
	chmod +x hang
	run -1 spirt-conform --deadline 500 ./hang
	assert_line 'not ok 1 - warm: answers "0" with step=0 worker=0 samples=8 loss=L: no answer to "0" within --deadline 500 ms'
	assert_line --regexp '^not ok 9 - cold: .*: it did not end within --deadline 500 ms$'
	[ -z "$(pgrep -f 'sleep 600' -P $$)" ]
}

@test "spirt-conform --evaluate: spirt-eval passes; an evaluation without accuracy, or one that hangs, fails, named" {
	run -0 spirt-conform --evaluate spirt-eval
	[ "${#lines[@]}" -eq 3 ]
	refute_output --partial 'not ok'
	printf '#!/bin/sh\necho loss=1\necho accuracy=1.5\n' >ev
	chmod +x ev
	run -1 spirt-conform --evaluate ./ev
	assert_line 'not ok 1 - evaluate: -q -m m -t 0 exits 0 and prints loss=L and accuracy=A (A from 0 to 1): no accuracy=A line (A from 0 to 1)'
	assert_line 'not ok 2 - evaluate: a step without a model (7) exits 66: exit 0'
	assert_line 'spirt-conform: 3 of 3 checks failed (spirt-function(7))'
	printf '#!/bin/sh\nexec sleep 600\n' >hang
	chmod +x hang
	run -1 spirt-conform --evaluate --deadline 300 ./hang
	assert_line --partial 'not ok 1 - evaluate: -q -m m -t 0 exits 0 and prints loss=L and accuracy=A (A from 0 to 1): it did not end within --deadline 300 ms'
}

@test "spirt-conform: misuse is 64, data and spec that do not fit 65, a --data store not there 66, a function found nowhere 69, no scratch directory 73, interrupted 75" {
	run -64 spirt-conform
	assert_output --partial 'usage: spirt-conform'
	run -64 spirt-conform --deadline 0 spirt-grad
	assert_output 'spirt-conform: --deadline 0: expected ms from 1 to 86400000'
	run -64 spirt-conform --spec nonsense spirt-grad
	assert_output --regexp '^spirt-conform: --spec nonsense: '
	run -69 spirt-conform /nonexistent/fn
	assert_output 'spirt-conform: /nonexistent/fn: not found'
	run -66 spirt-conform --data nowhere.db spirt-grad
	assert_output 'spirt-conform: --data nowhere.db: no such store'
	# data of 2 features, a model of 4
	awk 'BEGIN { for (i = 0; i < 40; i++) printf "%d,%d,%d\n", i % 2, i % 2, i % 3 }' >t.csv
	spirt-shard -s d.db -q -n 2 t.csv
	run -65 spirt-conform --data d.db spirt-grad
	assert_output --regexp '^spirt-conform: --spec softmax:4:3 does not fit the data: spirt-grad: '
	run -73 env TMPDIR=/nonexistent spirt-conform spirt-grad
	assert_output 'spirt-conform: cannot make a scratch directory in /nonexistent'
	# interrupted: 75, its function ended, its scratch store gone
	printf '#!/bin/sh\nexec sleep 613\n' >hang
	chmod +x hang
	spirt-conform ./hang >out 2>&1 &
	p=$!
	until_ 100 pgrep -f "sleep 613" -P "$p"
	sp=$(pgrep -f "sleep 613" -P "$p")
	kill -TERM "$p"
	rc=0
	wait "$p" || rc=$?
	[ "$rc" -eq 75 ]
	! kill -0 "$sp" 2>/dev/null
	[ -z "$(ls "$TMPDIR" | grep spirt-conform)" ]
	# its scratch store gone
	[ -z "$(ls "$TMPDIR" | grep spirt-conform)" ]
}

@test "spirt-train --function with functions that break the contract: as spirt-function(7) says" {
	csvbase
	# warm worker 1 hangs: killed at --deadline, declared dead, the run
	# goes on
	cp -r base hang
	stub hang1 'case " $* " in *" -w 1 "*) exec sleep 600 ;; esac'
	run -0 train hang --function "$PWD/hang1" --deadline 1500
	assert_output --regexp "step 0: warm $PWD/hang1 -w 1 \(pid [0-9]+\) did not answer within --deadline 1500 ms: declared dead"
	run -0 newest_model hang m
	assert_output $STEPS
	# warm worker 1 exits at once: declared dead, the run goes on
	cp -r base quit
	stub quit1 'case " $* " in *" -w 1 "*) exit 3 ;; esac'
	run -0 train quit --function "$PWD/quit1"
	assert_output --regexp "step 0: warm $PWD/quit1 -w 1 \(pid [0-9]+\) exited with status 3: declared dead"
	run -0 newest_model quit m
	assert_output $STEPS
	# an error answer (the example knows softmax only): the step fails,
	# 75, nothing applied
	cp -r base err
	run -75 train err --function "$PYTHON $SPIRT_ROOT/examples/your-function/softmax_fn.py"
	assert_line --regexp '^spirt-train: step 0: step=0 worker=[01] error=65$'
	run -0 spirt-store -s err ls model/
	refute_output --partial 'model/m@1'
	# cold worker 1 killed: declared dead, the run goes on
	cp -r base killed
	stub kill1 'case " $* " in *" -w 1 "*) kill -9 $$ ;; esac'
	run -0 train killed --cold --function "$PWD/kill1"
	assert_output --partial "step 0: cold $PWD/kill1 -w 1 was killed by signal 9: declared dead"
	# answers that are no answers: 70, nothing applied
	cp -r base junk
	printf '#!/bin/sh\nwhile read -r l; do echo ok; done\n' >junk.sh
	chmod +x junk.sh
	run -70 train junk --function "$PWD/junk.sh"
	assert_output 'spirt-train: step 0: an answer out of turn: ok'
	run -0 spirt-store -s junk ls model/
	refute_output --partial 'model/m@1'
	# NaN from worker 1: left out (reason 1), the step goes on with
	# worker 0's
	cp -r base nan
	badpy nan "$GLINE"'
    g[0] = np.nan if worker == 1 else g[0]'
	run -0 train nan --spec softmax:4:3 --function "$PYTHON $PWD/nan.py"
	run -0 "$PYTHON" -c "$PYREC
r = st.read_record(sys.stdin.buffer); print(r.array.tolist())" < <(spirt-store -s nan get agg/$((STEPS - 1))/excluded)
	assert_output '[[1, 1]]'
	# another worker's origin in its slot: the step's mean refuses it
	# (65: the warm spirt-update takes the mean, mean=grad), spirt-train
	# stops (75), nothing applied
	cp -r base other
	badpy other "$ORIGIN"
	run -75 train other --spec softmax:4:3 --function "$PYTHON $PWD/other.py"
	assert_line "spirt-update: grad/0/0: origin 1, not the key's worker 0"
	assert_line 'spirt-train: step 0: step=0 error=65'
	run -0 spirt-store -s other ls model/
	refute_output --partial 'model/m@1'
}
