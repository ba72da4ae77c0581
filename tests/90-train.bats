#!/usr/bin/env bats
# 90-train: the spirt-train workflow on Fashion-MNIST, a few steps at a time

load helper

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
	export SPIRT_STORE="$BATS_TEST_TMPDIR/spirt.db"
	export TMPDIR="$BATS_TEST_TMPDIR"       # (as helper.bash's setup)
	# (data by name: the test's own data, made by NumPy)
	case $BATS_TEST_DESCRIPTION in --train*) return 0 ;; esac
	[ -r "$FMNIST/train-images-idx3-ubyte.gz" ] ||
		skip "no Fashion-MNIST (Debian package dataset-fashion-mnist)"
}

teardown() {
	# no function may outlive its driver
	pkill -9 -f "$BATS_TEST_TMPDIR" 2>/dev/null || :
}

# functions still running in this test's directory (not other tests')
functions_here() {
	local p
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/cwd" 2>/dev/null)" = "$BATS_TEST_TMPDIR" ] ||
			continue
		case $(cat "$p/comm" 2>/dev/null) in
		spirt-grad|spirt-agg|spirt-update) echo "${p#/proc/}" ;;
		esac
	done
}

# warm_tool PID NAME: the pid of warm tool NAME under the spirt-train that
# PID (a timeout) runs (a child of its spirt-run)
warm_tool() {
	local drv sup
	# (the driver: the loop spirt-train's front became, spirt-train.sh)
	drv=$(pgrep -P "$1" -x spirt-train.sh) || return 0
	sup=$(pgrep -P "$drv" -x spirt-run) || return 0
	pgrep -P "$sup" -x "$2" | head -n 1
}

digest() {      # digest STORE KEY: hash of one stored record
	spirt-store -s "$1" get "$2" | md5sum
}

# replay T W N: x.db, a run that reassigns worker W's samples at step T
# (the revision the driver writes when W dies there, spirt-shard -t T),
# trained on to step N
replay() {
	spirt-train -q --steps "$1" --schedule constant -s x.db
	SPIRT_STORE=x.db spirt-shard -q -t "$1" -b 32 --group 4 \
	    --live "$(printf '0\n1\n2\n3\n' | grep -vx "$2" | paste -sd, -)"
	spirt-train -q --steps "$3" --schedule constant -s x.db \
	    --eval-every 1000
}

@test "a short warm run: model, log, plot, progress and test accuracy" {
	run -0 --separate-stderr spirt-train --steps 30 --eval-every 10
	[ -z "$output" ]
	[[ "$stderr" == *"step 10: test loss "*", accuracy 0."* ]]
	[[ "$stderr" == *"model/mlp@30; log"* ]]
	run -0 spirt-store ls model/
	assert_line --partial 'model/mlp@30'
	# the last two versions are kept, and only they, as --keep 2 says
	run -0 sh -c 'spirt-store ls model/ | cut -f1; spirt-store ls opt/ | cut -f1'
	assert_output "$(printf 'model/mlp@29\nmodel/mlp@30\nopt/mlp@29\nopt/mlp@30')"
	# spent gradients of early steps are pruned
	run -0 spirt-store ls grad/0/
	assert_output ''
	run -0 head -n 1 spirt.db.train-mlp.tsv
	assert_output "$(printf 'seconds\tstep\tepoch\tloss\ttest_loss\ttest_accuracy')"
	run -0 awk -F'\t' 'NR > 1 && $6 != "-" { n++ } END { print n }' spirt.db.train-mlp.tsv
	assert_output 3
	# accuracy after 30 steps is far above chance
	run -0 awk -F'\t' 'END { exit !($6 > 0.6) }' spirt.db.train-mlp.tsv
	run -0 "$PYTHON" -c "import sys; sys.exit(open('spirt.db.train-mlp.png','rb').read(4) != b'\x89PNG')"
}

@test "same seed, same bits: two warm runs and a cold run agree" {
	spirt-train -q --steps 12 -s a.db
	spirt-train -q --steps 12 -s b.db
	spirt-train -q --steps 12 -s c.db --cold
	[ "$(digest a.db model/mlp@12)" = "$(digest b.db model/mlp@12)" ]
	[ "$(digest a.db model/mlp@12)" = "$(digest c.db model/mlp@12)" ]
	spirt-train -q --steps 12 -s d.db -S 2
	[ "$(digest a.db model/mlp@12)" != "$(digest d.db model/mlp@12)" ]
}

@test "the bits of a run are main's: model and optimiser after 10 steps against stored hashes; warm, one update a step, no agg/<t>" {
	# (SPIRT_BLAS_LIB names no library: the functions fall back to the
	# reference kernels, plain C, the same bits on any CPU; the hashes
	# are those of main at 656024f, where spirt-agg, then spirt-update
	# made each step: a change of the mean's summation order fails it;
	# the evaluation, which changes no bit, with OpenBLAS: the reference
	# kernels under the sanitizers take longer than --deadline for it)
	export SPIRT_BLAS_LIB=/nonexistent
	set -- --evaluate "env -u SPIRT_BLAS_LIB spirt-eval"
	spirt-train -q -b 8 --steps 10 -S 3 -s h.db "$@"
	[ "$(digest h.db model/mlp@10)" = "a84fac23a4e018ecf9f88f17f88c26b6  -" ]
	[ "$(digest h.db opt/mlp@10)" = "c773d646e1b39db7331c509b9e6c08d6  -" ]
	spirt-train -q -b 8 --steps 10 -S 3 -o momentum -l 0.05 -s m.db "$@"
	[ "$(digest m.db model/mlp@10)" = "012b491112117c1439dbb65e4d512579  -" ]
	[ "$(digest m.db opt/mlp@10)" = "5105bbcb9cc082c4ff37bf95bc62a977  -" ]
	# the warm update took the mean itself (mean=grad): no agg/<t>, only
	# what it left out, agg/<t>/excluded, of the last two steps
	run -0 sh -c 'spirt-store -s h.db ls agg/ | cut -f1'
	assert_output "$(printf 'agg/8/excluded\nagg/9/excluded')"
	# and from the functions' slots (mean=slots): no grad/<t> stored
	run -0 spirt-store -s h.db ls grad/
	assert_output ''
	[ "$(od -An -tu8 -j8 -N8 h.db/scratch/slot.3 | tr -d ' ')" = 9 ]
}

@test "warm: a kill -9 of spirt-update inside its commit, after it read the step's gradients: 75, the slots kept, rerun resumes to the same model; a corrupt or truncated slot is 65, nothing stored" {
	spirt-train -q --steps 30 -s ref.db
	# (a library before libc's that kills spirt-update at its KILL_AT-th
	# pwrite or writev: LMDB's commit writes its pages, then its meta
	# page, with these, so the step's commit is cut short after it read
	# the gradients and aggregated them; in the sanitizer build it comes
	# before ASan's runtime, which is then told not to mind)
	cat >kill.c <<-'EOF2'
	#define _GNU_SOURCE
	#include <dlfcn.h>
	#include <errno.h>
	#include <signal.h>
	#include <stdlib.h>
	#include <string.h>
	#include <sys/uio.h>
	#include <unistd.h>
	static int n;
	static void hit(void) {
		const char *at = getenv("KILL_AT");
		if (at && strcmp(program_invocation_short_name, "spirt-update") == 0 &&
		    ++n == atoi(at))
			raise(SIGKILL);
	}
	ssize_t pwrite(int fd, const void *b, size_t len, off_t off) {
		ssize_t (*f)(int, const void *, size_t, off_t) =
		    (ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
		hit();
		return f(fd, b, len, off);
	}
	ssize_t writev(int fd, const struct iovec *v, int cnt) {
		ssize_t (*f)(int, const struct iovec *, int) =
		    (ssize_t (*)(int, const struct iovec *, int))dlsym(RTLD_NEXT, "writev");
		hit();
		return f(fd, v, cnt);
	}
	EOF2
	cc -shared -fPIC -o kill.so kill.c -ldl
	run -75 --separate-stderr env LD_PRELOAD="$PWD/kill.so" KILL_AT=25 \
	    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
	    spirt-train -q --steps 30 -s k.db
	[[ "$stderr" == *"warm spirt-update (pid "*") was killed by signal 9"* ]]
	last=$(spirt-store -s k.db ls model/ | cut -f1 | sed 's/.*@//' | sort -n | tail -n 1)
	[ "$last" -ge 1 ] && [ "$last" -lt 30 ]
	# the step cut short left its gradients in the functions' slots
	# (their header's step, bytes 8-15), none in the store, and wrote
	# nothing of its own
	for w in 0 1 2 3; do
		[ "$(od -An -tu8 -j8 -N8 "k.db/scratch/slot.$w" | tr -d ' ')" = "$last" ]
	done
	run -0 spirt-store -s k.db ls grad/
	assert_output ''
	run -66 spirt-store -s k.db get "opt/mlp@$((last + 1))"
	# a slot's header changed (its checksum) or cut short: 65, named,
	# nothing stored (on a copy)
	cp -r k.db c.db
	printf 'X' | dd of=c.db/scratch/slot.2 bs=1 seek=30 conv=notrunc 2>/dev/null
	run -65 --separate-stderr sh -c "echo '$last mean=slots' | spirt-update -q -m mlp -s c.db -i"
	assert_output "step=$last error=65"
	[[ "$stderr" == *"scratch/slot.2: header checksum mismatch"* ]]
	rm -rf c.db
	cp -r k.db c.db
	truncate -s 5000 c.db/scratch/slot.1
	run -65 --separate-stderr sh -c "echo '$last mean=slots' | spirt-update -q -m mlp -s c.db -i"
	[[ "$stderr" == *"scratch/slot.1: 5000 bytes, its header says 235146 values"* ]]
	run -66 spirt-store -s c.db get "model/mlp@$((last + 1))"
	run -66 spirt-store -s c.db get "opt/mlp@$((last + 1))"
	run -0 --separate-stderr spirt-train --steps 30 -s k.db
	[[ "$stderr" == *"steps $last..30 of "* ]]
	[ "$(digest ref.db model/mlp@30)" = "$(digest k.db model/mlp@30)" ]
	[ "$(digest ref.db opt/mlp@30)" = "$(digest k.db opt/mlp@30)" ]
}

@test "warm: a function killed mid-write of its slot (its gradient written, not its header): declared dead, the slot not taken, the model a reassignment's at that step" {
	# (a library before libc's that kills one spirt-grad, once, at its
	# KILL_AT-th slot header: the header's checksum, XXH3_64bits of its
	# 368 bytes, comes after the gradient and before the magic)
	cat >kill.c <<-'EOF2'
	#define _GNU_SOURCE
	#include <dlfcn.h>
	#include <errno.h>
	#include <fcntl.h>
	#include <signal.h>
	#include <stdint.h>
	#include <stdlib.h>
	#include <string.h>
	#include <unistd.h>
	static int n;
	uint64_t XXH3_64bits(const void *p, size_t len) {
		uint64_t (*f)(const void *, size_t) =
		    (uint64_t (*)(const void *, size_t))dlsym(RTLD_NEXT, "XXH3_64bits");
		const char *at = getenv("KILL_AT"), *once = getenv("KILL_ONCE");
		if (at && once && len == 368 &&
		    strcmp(program_invocation_short_name, "spirt-grad") == 0 &&
		    ++n == atoi(at) && open(once, O_CREAT | O_EXCL | O_WRONLY, 0644) >= 0)
			raise(SIGKILL);
		return f(p, len);
	}
	EOF2
	cc -shared -fPIC -o kill.so kill.c -ldl
	run -0 --separate-stderr env LD_PRELOAD="$PWD/kill.so" KILL_AT=30 \
	    KILL_ONCE="$PWD/killed" \
	    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
	    spirt-train -q --steps 60 --schedule constant -s d.db --eval-every 1000
	[ -f killed ]
	w=$(printf '%s\n' "$stderr" | sed -n 's/^spirt-train: step [0-9]*: warm spirt-grad -w \([0-9]*\) .*killed by signal 9: declared dead.*/\1/p')
	t=$(printf '%s\n' "$stderr" | sed -n "s/^spirt-train: step \([0-9]*\): warm spirt-grad -w $w .*/\1/p")
	[ -n "$w" ] && [ "$t" -eq 29 ] || fail "$stderr"
	# its slot holds no gradient (no magic): it was not restarted
	[ "$(head -c 8 "d.db/scratch/slot.$w" | od -An -tx1 | tr -d ' ')" = 0000000000000000 ]
	# the model is the bytes of a run that reassigns at step T
	replay "$t" "$w" 60
	[ "$(digest d.db model/mlp@60)" = "$(digest x.db model/mlp@60)" ]
}

@test "killed mid-step (SIGKILL to every process), rerun resumes: same model as an uninterrupted run" {
	spirt-train -q --cold --steps 40 -s ref.db
	setsid spirt-train -q --cold --steps 40 -s k.db &
	pid=$!
	# (a minute at most: sharding on a loaded machine takes a while)
	for i in $(seq 1200); do
		n=$(spirt-store -s k.db ls model/ 2>/dev/null | wc -l)
		[ "$n" -ge 1 ] && spirt-store -s k.db ls model/ | grep -q '@1[0-9]' && break
		sleep 0.05
	done
	kill -9 -- -"$pid"
	wait "$pid" || :
	last=$(spirt-store -s k.db ls model/ | cut -f1 | sed 's/.*@//' | sort -n | tail -n 1)
	[ "$last" -ge 10 ] && [ "$last" -lt 40 ]
	run -0 --separate-stderr spirt-train --cold --steps 40 -s k.db
	[[ "$stderr" == *"steps $last..40 of "* ]]
	[ "$(digest ref.db model/mlp@40)" = "$(digest k.db model/mlp@40)" ]
	# the log's steps only go up, across the crash
	run -0 awk -F'\t' 'NR > 2 && $2 <= p { bad = 1 } NR > 1 { p = $2 } END { exit bad }' k.db.train-mlp.tsv
}

@test "a power loss between checkpoints: back to the last durable version, redone bit for bit, its log rows dropped" {
	spirt-train -q --cold --steps 40 -s ref.db
	setsid spirt-train -q --cold --steps 40 --checkpoint 8 --eval-every 4 -s p.db &
	pid=$!
	for i in $(seq 1200); do
		spirt-store -s p.db ls model/ 2>/dev/null | grep -q '@1[1-9]' && break
		sleep 0.05
	done
	kill -9 -- -"$pid"
	wait "$pid" || :
	echo another-boot >p.db/scratch/boot    # the power loss
	last=$(spirt-store -s p.db ls model/ | cut -f1 | sed 's/.*@//' | sort -n | tail -n 1)
	[ "$last" -ge 8 ] && [ $((last % 8)) -eq 0 ]
	run -0 awk -F'\t' -v l="$last" 'NR > 1 && $2 > l { f = 1 } END { exit !f }' p.db.train-mlp.tsv
	run -0 --separate-stderr spirt-train --cold --steps 40 --checkpoint 8 --eval-every 4 -s p.db
	[[ "$stderr" == *"steps $last..40 of "* ]]
	[ "$(digest ref.db model/mlp@40)" = "$(digest p.db model/mlp@40)" ]
	run -0 awk -F'\t' 'NR > 2 && $2 <= p { bad = 1 } NR > 1 { p = $2 } END { exit bad }' p.db.train-mlp.tsv
	# the run's end is durable
	echo another-boot >p.db/scratch/boot
	run -0 spirt-store -s p.db ls model/
	assert_line --partial 'model/mlp@40'
}

@test "a warm function that dies: declared dead, training goes on; a dead update exits 75, rerun resumes" {
	spirt-train -q --steps 400 -s ref.db
	# (timeout: a driver that waited forever would fail, not hang, the test)
	# (a constant schedule: a replay below trains to the death's step with
	# the same learning rates)
	timeout 300 spirt-train -q --steps 400 --schedule constant -s d.db \
	    --eval-every 1000 2>err &
	pid=$!
	# (up to a minute: sharding on a loaded machine takes a while)
	for i in $(seq 600); do
		spirt-store -s d.db ls model/ 2>/dev/null | grep -q '@[1-9][0-9]' && break
		sleep 0.1
	done
	# (the driver's own child, found at once: a scan of /proc on a loaded
	# machine can outlast the run)
	victim=$(warm_tool "$pid" spirt-grad)
	[ -n "$victim" ]
	w=$(tr '\0' ' ' <"/proc/$victim/cmdline" | sed 's/.* -w \([0-9]*\) .*/\1/')
	kill -9 "$victim"
	rc=0
	wait "$pid" || rc=$?
	[ "$rc" -eq 0 ] || { cat err; echo "rc=$rc"; false; }
	# the tool, its worker and how it died are named (-q keeps them:
	# they are no progress lines)
	grep -q "warm spirt-grad -w $w (pid $victim) was killed by signal 9: declared dead; its samples go to the other functions" err ||
		fail "$(cat err)"
	for i in $(seq 50); do
		[ -z "$(functions_here)" ] && break
		sleep 0.1
	done
	[ -z "$(functions_here)" ]
	# the model is the bytes of a run that reassigns at the same step T:
	# one trained to T, the revision the driver writes (spirt-shard -t T:
	# 400 steps of 32 lie in epoch 0, 469 steps), trained on to 400
	t=$(sed -n "s/^spirt-train: step \([0-9]*\): warm spirt-grad -w $w .*/\1/p" err)
	[ -n "$t" ] && [ "$t" -gt 0 ] && [ "$t" -lt 400 ]
	replay "$t" "$w" 400
	[ "$(digest d.db model/mlp@400)" = "$(digest x.db model/mlp@400)" ]
	# the update tool ended (SIGTERM: it finishes its step and exits 0)
	timeout 300 spirt-train -q --steps 400 -s e.db --eval-every 1000 2>err &
	pid=$!
	for i in $(seq 600); do
		victim=$(warm_tool "$pid" spirt-update)
		[ -n "$victim" ] && break
		sleep 0.1
	done
	[ -n "$victim" ]
	# (a process found at once may not have set its handler yet: a
	# SIGTERM before it does kills it, which is not what is tested here.
	# Wait until SIGTERM (bit 15) is in its caught-signal mask.)
	for i in $(seq 600); do
		caught "$victim" 15 && break
		sleep 0.1
	done
	kill -TERM "$victim"
	rc=0
	wait "$pid" || rc=$?
	[ "$rc" -eq 75 ] || { cat err; echo "rc=$rc"; false; }
	grep -q "warm spirt-update (pid $victim) exited with status 0; rerun to resume" err ||
		fail "$(cat err)"
	for i in $(seq 50); do
		[ -z "$(functions_here)" ] && break
		sleep 0.1
	done
	[ -z "$(functions_here)" ]
	run -0 spirt-train -q --steps 400 -s e.db
	[ "$(digest ref.db model/mlp@400)" = "$(digest e.db model/mlp@400)" ]
}

@test "SIGTERM stops a warm run and its functions; rerun resumes to the same model" {
	spirt-train -q --steps 400 -s ref.db
	spirt-train -q --steps 400 -s t.db --eval-every 1000 &
	pid=$!
	# (up to a minute: sharding on a loaded machine takes a while)
	for i in $(seq 600); do
		spirt-store -s t.db ls model/ 2>/dev/null | grep -q '@[1-9][0-9]' && break
		sleep 0.1
	done
	# the warm functions are running (the children of the driver's
	# spirt-run, found at once: a scan of /proc on a loaded machine can
	# outlast the run)
	pgrep -P "$(pgrep -P "$pid" -x spirt-run)" -x spirt-grad >/dev/null
	kill -TERM "$pid"
	wait "$pid" || :
	# each function finishes its invocation, then exits
	for i in $(seq 50); do
		[ -z "$(functions_here)" ] && break
		sleep 0.1
	done
	[ -z "$(functions_here)" ]
	last=$(spirt-store -s t.db ls model/ | cut -f1 | sed 's/.*@//' | sort -n | tail -n 1)
	[ "$last" -lt 400 ]
	run -0 spirt-train -q --steps 400 -s t.db
	[ "$(digest ref.db model/mlp@400)" = "$(digest t.db model/mlp@400)" ]
}

@test "after a (simulated) reboot the scratch gradients are gone; the run resumes to the same model" {
	spirt-train -q --steps 30 -s ref.db
	# (the functions by path: not spirt-grad's slots, grad/<t>/<w> in
	# the scratch environment; a slot of another boot: test_slot)
	spirt-train -q --steps 20 -s r.db --function "$(command -v spirt-grad)"
	run -0 spirt-store -s r.db ls grad/
	[ -n "$output" ]                # the last step's gradients are kept
	echo another-boot > r.db/scratch/boot
	run -0 spirt-store -s r.db ls grad/
	assert_output ''                # another boot's scratch is not read
	run -0 spirt-train -q --steps 30 -s r.db
	[ "$(digest ref.db model/mlp@30)" = "$(digest r.db model/mlp@30)" ]
	[ "$(cat r.db/scratch/boot)" = "$(cat /proc/sys/kernel/random/boot_id)" ]
}

@test "a finished run is not run again; --target stops at an accuracy" {
	spirt-train -q --steps 10
	d=$(digest spirt.db model/mlp@10)
	run -0 --separate-stderr spirt-train --steps 10
	[[ "$stderr" == *"model/mlp@10: already trained (10 steps)"* ]]
	[ "$(digest spirt.db model/mlp@10)" = "$d" ]
	run -0 --separate-stderr spirt-train --steps 200 --eval-every 10 \
	    --target 0.5 -s t.db
	[[ "$stderr" == *"reached accuracy 0."*" >= 0.5 at step "* ]]
	run -0 spirt-store -s t.db ls model/
	refute_output --partial 'model/mlp@200'
}

@test "robust rules on the fused step (the update aggregates the slots itself): the bits of spirt-agg then spirt-update" {
	# the reference: cold, the functions by path, so spirt-agg makes
	# agg/<t> and spirt-update applies it; the warm run aggregates in
	# the update's transaction (mean=slots rule=...), no agg/<t>
	fn=$(command -v spirt-grad)
	for r in trim:0.25 median norm wmean krum:1 mkrum:1:3; do
		spirt-train -q -n 6 -b 8 --steps 5 -S 3 -a "$r" -s "w$r.db"
		spirt-train -q -n 6 -b 8 --steps 5 -S 3 -a "$r" -s "c$r.db" \
		    --cold --function "$fn"
		[ "$(digest "w$r.db" model/mlp@5)" = "$(digest "c$r.db" model/mlp@5)" ] ||
			fail "$r: not the same model"
		run -0 spirt-store -s "w$r.db" ls agg/4
		assert_output --partial 'agg/4/excluded'
		refute_line --regexp '^agg/4[[:space:]]'
		run -0 spirt-store -s "w$r.db" ls grad/
		assert_output ''
	done
}

@test "other models, optimisers and robust rules run" {
	run -0 spirt-train -q --steps 4 -m softmax -o sgd -s s.db
	run -0 spirt-train -q --steps 4 -o nesterov -a trim:0.25 -s t.db
	run -0 spirt-train -q --steps 4 -o momentum -a median -s m.db
	run -0 spirt-train -q --steps 4 -n 5 -b 16 -a krum:1 -s k.db
	run -0 spirt-train -q --steps 2 -m cnn -n 2 -b 8 -s c.db
	run -0 spirt-store -s c.db show model/cnn@2
	assert_line 'name=cnn:1x28x28-32-64-10'
	# another model in the same store: each keeps its log and plot
	[ -s c.db.train-cnn.tsv ]
	cnn=$(cat c.db.train-cnn.tsv c.db.train-cnn.png | md5sum)
	run -0 --separate-stderr spirt-train --steps 3 -m mlp -n 2 -b 8 -s c.db
	[[ "$stderr" == *"log c.db.train-mlp.tsv; plot c.db.train-mlp.png"* ]]
	[ "$(cat c.db.train-cnn.tsv c.db.train-cnn.png | md5sum)" = "$cnn" ]
	run -0 awk -F'\t' 'END { print $2 }' c.db.train-mlp.tsv
	assert_output 3
	run -0 "$PYTHON" -c "import sys; sys.exit(open('c.db.train-mlp.png','rb').read(4) != b'\x89PNG')"
}

# bad_option ARGS...: spirt-train ARGS exits 64 at once, with a message
# and no work done: no store made
bad_option() {
	run -64 --separate-stderr timeout 20 spirt-train -s new.db "$@"
	[[ "${stderr_lines[0]}" == "spirt-train: "* ]] ||
		fail "$*: ${stderr_lines[0]}"
	[ ! -e new.db ] || fail "$*: the store was made"
}

# the bytes of a store's files (a write of any kind changes them)
store_bytes() {
	cat "$1/data.mdb" "$1/scratch/data.mdb" 2>/dev/null | md5sum
}

@test "every option is checked before any work: 64 at once, store untouched" {
	# each option's argument missing: 64 with usage, named as written:
	# every option -h shows with an argument, short and long
	opts=$(spirt-train -h | sed -n \
	    's/^  \(-[a-zA-Z]\), \(--[a-z-]*\) [A-Z:]\{1,\} .*/\1 \2/p
	     s/^      \(--[a-z-]*\) [A-Z:]\{1,\} .*/\1/p')
	[ "$(echo $opts | wc -w)" -eq 40 ]
	for o in $opts; do
		run -64 --separate-stderr spirt-train -q "$o"
		[ "${stderr_lines[0]}" = "spirt-train: $o: missing argument" ] ||
			fail "$o: ${stderr_lines[0]}"
		[[ "${stderr_lines[1]}" == "usage: spirt-train "* ]]
	done
	# rules, asked of spirt-agg --check-rule for the functions given
	bad_option -a trim:0.6
	[[ "$stderr" == *"-a trim:0.6: --trim: value out of range"* ]]
	bad_option -n 2 -a trim:0.6
	bad_option -a trim:0.1          # cuts nothing of 4
	bad_option -n 2 -a trim:0.25
	bad_option -a krum:1
	[[ "$stderr" == *"Krum needs W > 2f+2 = 4"* ]]
	bad_option -a mkrum:0:5
	bad_option -a mkrum:1
	bad_option -a krum:x
	bad_option -a 'trim:0.25 -P'
	bad_option -a trim:
	# numbers: bad, out of range, beyond sh's arithmetic
	bad_option -b 0
	bad_option -b 1048577
	bad_option -e 99999999999999999999
	bad_option -n 257
	bad_option -S -1
	bad_option -S 1000000000000000000
	bad_option --steps 1e3
	bad_option --eval-every ''
	bad_option --checkpoint x
	bad_option -l 1e7
	bad_option -l -0.1
	bad_option --target 1.5
	# model name, seed and spec, asked of spirt-init
	bad_option -m a/b --spec mlp:4-3
	bad_option -m mlp --spec mlp:784
	bad_option -m cnn --spec bogus
	bad_option -s ''
	bad_option --train ../x
	bad_option --test .x
	bad_option --train x --data .
	# a store already sharded: 64 too, on every rerun, nothing changed
	spirt-train -q --steps 1 -n 2 -s one.db
	before=$(store_bytes one.db)
	for i in 1 2; do
		run -64 --separate-stderr spirt-train -s one.db -n 2 -a trim:0.6
		[[ "$stderr" == *"-a trim:0.6: --trim: value out of range"* ]]
	done
	run -64 spirt-train -s one.db -n 2 -a krum:0 --spec x
	[ "$(store_bytes one.db)" = "$before" ]
	# leading zeros are decimal, not octal (08 would be a shell error)
	run -0 --separate-stderr spirt-train -s one.db --steps 02 -n 02 -b 08
	[[ "$stderr" == *"steps 1..2 of 18750"* ]]
}

@test "bad options: 64; a store sharded for another -n: 65" {
	run -64 spirt-train -n x
	run -64 spirt-train -n 0
	run -64 spirt-train -o rmsprop
	run -64 spirt-train -a mode
	run -64 spirt-train --sync sometimes
	run -64 spirt-train --schedule linear
	run -64 spirt-train --target high
	run -64 spirt-train -l fast
	run -64 spirt-train -m resnet
	run -64 spirt-train extra
	spirt-train -q --steps 1 -n 2
	run -65 --separate-stderr spirt-train --steps 2 -n 3
	[[ "$stderr" == *"has data for 2 workers, not 3"* ]]
	run -66 spirt-train --data /nonexistent -s other.db
}

@test "run by its path, the tools beside it: found there with none on PATH, and trains" {
	run -0 --separate-stderr env PATH=/usr/bin:/bin \
	    "$SPIRT_ROOT/spirt-train" -q --steps 3 -s by-path.db
	run -0 spirt-store -s by-path.db ls model/
	assert_line --partial 'model/mlp@3'
}

@test "the driver's clock and waits are spirt-run's: no wall clock, no fractional sleep" {
	# every deadline on CLOCK_MONOTONIC (spirt-run -c, -w, -r), one
	# budget a wait; POSIX sleep takes whole seconds only
	run -1 grep -nE 'date \+%s|sleep [0-9]*\.[0-9]|sleep 0' "$SPIRT_ROOT/spirt-train.sh"
	run -0 grep -c 'spirt-run -c' "$SPIRT_ROOT/spirt-train.sh"
	# no timer subshell of the server's start, no timeout(1) around the
	# evaluation (spirt-run runs it)
	run -1 grep -nE 'tready|orphaned|timeout --' "$SPIRT_ROOT/spirt-train.sh"
}

@test "a tool found neither beside spirt-train nor on PATH: 69, named, store untouched" {
	# the front and its loop alone in a directory, no tool on PATH
	mkdir alone
	cp "$SPIRT_ROOT/spirt-train" "$SPIRT_ROOT/spirt-train.sh" alone/
	run -69 --separate-stderr env PATH=/usr/bin:/bin alone/spirt-train \
	    -q --steps 1 -s alone.db
	[ "$stderr" = "spirt-train: spirt-store: not found beside spirt-train ($PWD/alone) or on PATH" ]
	[ ! -e alone.db ]
	# every tool but spirt-agg beside it: that one is named
	for t in "$SPIRT_ROOT"/spirt-*; do
		case ${t##*/} in
		spirt-agg|spirt-train|spirt-train.sh) ;;
		*) [ -f "$t" ] && [ -x "$t" ] && ln -s "$t" alone/ ;;
		esac
	done
	run -69 --separate-stderr env PATH=/usr/bin:/bin alone/spirt-train \
	    -q --steps 1 -s alone.db
	[ "$stderr" = "spirt-train: spirt-agg: not found beside spirt-train ($PWD/alone) or on PATH" ]
	[ ! -e alone.db ]
	# spirt-agg on PATH: found there, the rest beside, it trains
	mkdir onpath
	ln -s "$SPIRT_ROOT/spirt-agg" onpath/
	run -0 --separate-stderr env PATH="/usr/bin:/bin:$PWD/onpath" \
	    alone/spirt-train -q --steps 1 -s alone.db
	run -0 spirt-store -s alone.db ls model/
	assert_line --partial 'model/mlp@1'
}

@test "the front runs the loop beside it, or in ../libexec/spirt, or its own file's; the loop refuses to run without it, 64" {
	# the front alone: the loop found nowhere, 69, named, nothing made
	mkdir -p alone inst/bin inst/libexec/spirt
	cp "$SPIRT_ROOT/spirt-train" alone/
	run -69 --separate-stderr alone/spirt-train -q --steps 1 -s alone.db
	[ "$stderr" = "spirt-train: spirt-train.sh, its training loop: not found beside spirt-train ($PWD/alone) or in $PWD/alone/../libexec/spirt" ]
	[ ! -e alone.db ]
	# installed, the loop in ../libexec/spirt: it runs (its messages)
	cp "$SPIRT_ROOT/spirt-train" inst/bin/
	cp "$SPIRT_ROOT/spirt-train.sh" inst/libexec/spirt/
	run -66 --separate-stderr inst/bin/spirt-train -q --steps 1 -s n.db \
	    --train nope
	[[ "$stderr" == "spirt-train: --train nope: store n.db has no data set nope"* ]]
	# a link to the tree's front: its own file's directory holds the loop
	ln -s "$SPIRT_ROOT/spirt-train" linked
	run -66 --separate-stderr ./linked -q --steps 1 -s n.db --train nope
	[[ "$stderr" == "spirt-train: --train nope: store n.db has no data set nope"* ]]
	# the loop on its own, or handed something else than NAME=VALUE
	run -64 --separate-stderr "$SPIRT_ROOT/spirt-train.sh"
	[[ "$stderr" == "spirt-train: spirt-train.sh is spirt-train "*"'s training loop: run spirt-train" ]]
	run -64 --separate-stderr "$SPIRT_ROOT/spirt-train.sh" --front=0.0.0 \
	    store=x
	run -70 --separate-stderr "$SPIRT_ROOT/spirt-train.sh" \
	    "--front=$(spirt-train -V | cut -d' ' -f2)" 'a;b=c'
	[ "$stderr" = "spirt-train: spirt-train.sh: not a NAME=VALUE: a;b=c" ]
	[ ! -e n.db ]
}

@test "option values reach the loop as they are: quotes, \$(...), blanks, newlines never read as code" {
	v=$'d \'"$(touch pwned)`touch pwned2`${x:-y}\nz'
	run -66 --separate-stderr spirt-train -q --steps 1 -s new.db \
	    --data "$PWD/$v"
	[[ "$stderr" == *"$PWD/$v/train-images-idx3-ubyte.gz"* ]]
	# (a tool's message: its first line)
	run -64 --separate-stderr spirt-train -q --steps 1 -s new.db \
	    --spec "$v" --function "spirt-grad $v"
	[[ "$stderr" == *"${v%?z}" ]]
	run -66 --separate-stderr spirt-train -q -s new.db --peers "$v" \
	    --byzantine 'peer:$(touch pwned)'
	[[ "$stderr" == "spirt-train: --peers ${v%?z}" ]]
	[ ! -e pwned ] && [ ! -e pwned2 ]
	[ ! -e new.db ]
}

# soft STORE [ARGS...]: softmax regression on the NumPy data, 20 steps
soft() {
	local s=$1
	shift
	timeout 120 spirt-train -q -s "$s" -m soft --spec softmax:4:3 -n 2 \
	    -b 16 -l 0.1 --steps 20 --eval-every 10 "$@"
}

@test "--train DS --test DS: a NumPy data set in the store trains; the bytes of the same data under the default names" {
	numpy_set
	spirt-shard -q -s n.db -d mine -n 2 --seed 1 x.npy y.npy
	spirt-shard -q -s n.db -d mine-test t.npz
	spirt-shard -q -s d.db -n 2 --seed 1 x.npy y.npy
	spirt-shard -q -s d.db -d test t.npz
	cp -r n.db c.db
	run -0 soft n.db --train mine --test mine-test
	run -0 soft d.db
	[ "$(digest n.db model/soft@20)" = "$(digest d.db model/soft@20)" ]
	diff <(cut -f2- n.db.train-soft.tsv) <(cut -f2- d.db.train-soft.tsv)
	# evaluated on mine-test's 60 samples, learnt
	run -0 spirt-eval -s n.db -d mine-test -m soft -t 20
	assert_line samples=60
	run -0 awk -F'\t' 'END { exit !($6 > 0.8) }' n.db.train-soft.tsv
	# nothing under the default names in n.db
	run -0 spirt-store -s n.db ls data/t
	assert_output ''
	# cold, the same model
	run -0 soft c.db --train mine --test mine-test --cold
	[ "$(digest n.db model/soft@20)" = "$(digest c.db model/soft@20)" ]
}

@test "--train, --test: a data set not in the store 66, naming the spirt-shard command; a bad name or with --data 64; a spec that does not fit 65; nothing written" {
	numpy_set
	spirt-shard -q -s n.db -d mine -n 2 --seed 1 x.npy y.npy
	spirt-shard -q -s n.db -d mine-test t.npz
	spirt-store -s n.db ls | cut -f1 >before
	run -66 --separate-stderr soft n.db --train nope --test mine-test
	[[ "$stderr" == "spirt-train: --train nope: store n.db has no data set nope; make it: spirt-shard -s n.db -d nope -n 2 FILE [LABELS]" ]]
	run -66 --separate-stderr soft n.db --train mine --test nope
	[[ "$stderr" == *"--test nope: store n.db has no data set nope; make it: spirt-shard -s n.db -d nope "* ]]
	# --train alone: the test set is test, not there, not sharded from
	# Fashion-MNIST
	run -66 --separate-stderr soft n.db --train mine
	[[ "$stderr" == *"--test test: store n.db has no data set test"* ]]
	run -64 soft n.db --train ../mine --test mine-test
	run -64 soft n.db --train .mine --test mine-test
	run -64 soft n.db --train '' --test mine-test
	run -64 soft n.db --train mine --test 'a b'
	run -64 --separate-stderr soft n.db --data . --train mine
	[[ "$stderr" == *"--data .: "*"spirt-shard -d"* ]]
	# a spec that does not fit the data's features or classes: 65 before
	# any work, not a step's functions failing
	run -65 --separate-stderr soft n.db --train mine --test mine-test \
	    --spec softmax:5:3
	[[ "$stderr" == "spirt-train: --train mine: --spec softmax:5:3 does not fit it: data set mine has 4 features per sample, model softmax:5:3 takes 5"* ]]
	run -65 --separate-stderr soft n.db --train mine --test mine-test \
	    --spec softmax:4:2
	[[ "$stderr" == *"--spec softmax:4:2 does not fit it: data set mine has 3 classes, model softmax:4:2 has 2"* ]]
	"$PYTHON" -c 'import numpy as np
np.savez("t5.npz", x=np.zeros((9, 5), np.float32), y=np.arange(9) % 3)'
	spirt-shard -q -s n.db -d five t5.npz
	spirt-store -s n.db ls | cut -f1 >before
	run -65 --separate-stderr soft n.db --train mine --test five
	[[ "$stderr" == "spirt-train: --test five: --spec softmax:4:3 does not fit it: data set five has 5 features"* ]]
	spirt-store -s n.db ls | cut -f1 | diff before -
	[ ! -e n.db.train-soft.tsv ]
}

@test "--train DS: the front's checks of the data, the model and the peers: a batch past a worker's samples 64, shards that do not read 65, a model record naming no spec 65, a bad peers line 65; nothing written" {
	numpy_set
	spirt-shard -q -s n.db -d mine -n 2 --seed 1 x.npy y.npy
	spirt-shard -q -s n.db -d mine-test t.npz
	# (a data set whose info is there, its shards not)
	spirt-store -s n.db get data/mine/info >info.rec
	spirt-store -s n.db put data/bad/info info.rec
	# (a model of one's own whose record names no spec)
	"$PYTHON" -c 'import numpy as np; np.save("w.npy", np.zeros(15, np.float32))'
	spirt-store -s n.db import -t 0 model/own@0 w.npy
	spirt-store -s n.db ls | cut -f1 >before
	# 240 samples in 2 shards: 120 a worker
	run -64 --separate-stderr soft n.db --train mine --test mine-test -b 121
	[ "$stderr" = "spirt-train: batch 121 is larger than a worker's 120 samples" ]
	run -65 --separate-stderr soft n.db --train bad --test mine-test
	[ "${stderr##*$'\n'}" = "spirt-train: --train bad: spirt-shard -d bad --stats: no shards in store n.db" ]
	run -65 --separate-stderr spirt-train -q -s n.db -m own -n 2 \
	    --train mine --test mine-test
	[ "$stderr" = "spirt-train: model/own@0: no name in its record" ]
	printf 'p0 %s/n.db\nbad\n' "$PWD" >peers
	run -65 --separate-stderr soft n.db --train mine --test mine-test \
	    --peers peers
	[ "$stderr" = 'spirt-train: --peers peers: line 2: "bad": expected "id location"' ]
	spirt-store -s n.db ls | cut -f1 | diff before -
	[ ! -e n.db.train-soft.tsv ] && [ ! -e n.db.train-own.tsv ]
}

@test "--train DS sharded for another number of functions: 65 naming the spirt-shard command that fits, with --peers P x M; sharded again, it trains" {
	numpy_set
	spirt-shard -q -s n.db -d mine -n 2 --seed 1 x.npy y.npy
	spirt-shard -q -s n.db -d mine-test t.npz
	run -65 --separate-stderr soft n.db --train mine --test mine-test -n 3
	[[ "$stderr" == "spirt-train: --train mine: store n.db has data for 2 workers, not 3; shard it again: spirt-shard -s n.db -d mine -n 3 FILE [LABELS], or train with -n 2" ]]
	run -65 --separate-stderr soft n.db --train mine --test mine-test -n 1
	[[ "$stderr" == *"not 1; shard it again: spirt-shard -s n.db -d mine -n 1 FILE [LABELS], or train with -n 2" ]]
	# two peers of two functions: four shards; one function each fits
	printf 'p0 http://127.0.0.1:1\np1 http://127.0.0.1:2\n' >peers
	run -65 --separate-stderr soft n.db --train mine --test mine-test \
	    --peers peers
	[[ "$stderr" == *"has data for 2 workers, not 4; shard it again: spirt-shard -s n.db -d mine -n 4 FILE [LABELS], or train with -n 1 (2 peers)" ]]
	run -0 spirt-store -s n.db ls model/
	assert_output ''
	# as the message says
	spirt-shard -q -s n.db -d mine -n 3 --seed 1 x.npy y.npy
	run -0 soft n.db --train mine --test mine-test -n 3
	spirt-store -s n.db get model/soft@20 >/dev/null
}
