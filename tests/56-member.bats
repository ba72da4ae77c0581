#!/usr/bin/env bats
# 56-member: a group that grows and shrinks (docs/contracts.md, "The
# assignment", and spirt-train(1), "Joining and leaving a running
# group").  A spare slot of the peers file (a line "id location spare")
# is out of the rounds with no wait until it beats, and joins a running
# group at an epoch's first step as a rejoiner does (its invite token
# checked by every member it speaks to, the model fetched and checked
# against the signed digests); spirt-train --leave makes a peer leave at
# its next epoch's first step, and the others take its workers out from
# there.  No assertion is on time: each wait is for a state, bounded.

load helper
load coverage

teardown() {
	for p in $BG; do
		kill -TERM "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	:
}

@test "spare slots: the peers file's third word; spirt-train's spares need --beat; --leave asks a store's run to leave" {
	printf 'p0 %s/s0\np1 %s/s1 spare\n' "$PWD" "$PWD" >peers
	run -0 spirt-peer peers -P peers --peer 0
	assert_line "spares='p1'"
	assert_line 'selfspare=0'
	run -0 spirt-peer peers -P peers --peer 1
	assert_line "spares=''"
	assert_line 'selfspare=1'
	# another third word, or a fourth, is no peers file
	printf 'p0 %s/s0\np1 %s/s1 extra\n' "$PWD" "$PWD" >bad
	run -65 spirt-peer peers -P bad --peer 0
	assert_output --partial 'line 2: '
	printf 'p0 %s/s0\np1 %s/s1 spare spare\n' "$PWD" "$PWD" >bad
	run -65 spirt-peer peers -P bad --peer 0
	# the exchange reads the file alike
	spirt-peer keygen p0.key >/dev/null
	SPIRT_KEY=p0.key SPIRT_ID=p0 SPIRT_RUN=r1 \
	    run -65 spirt-peer exchange -m m -s s0 -P bad -t 0
	assert_output --partial 'bad:2: expected "id url"'
	# (a file without spares: no spares= line, as before)
	printf 'p0 %s/s0\np1 %s/s1\n' "$PWD" "$PWD" >nospare
	run -0 spirt-peer peers -P nospare --peer 0
	refute_line --partial 'spare'
	# spare slots join by their beats
	smalldata "$BATS_FILE_TMPDIR/data"
	run -64 spirt-train -s s0 --data "$BATS_FILE_TMPDIR/data" \
	    --peers peers --peer 0
	assert_output 'spirt-train: --peers peers: spare slots (the lines that say spare) join a running group by their beats: give --beat'
	[ ! -e s0 ]
	# --leave: no store is 66; else STORE.leave, for the run to see
	run -66 spirt-train -s s0 --leave
	assert_output --partial 'spirt-train: --leave: store s0: '
	[ ! -e s0.leave ]
	mkdir s0
	run -0 spirt-train -s s0 --leave
	assert_output ''
	[ -e s0.leave ]
	run -64 spirt-train -s s0 --leave extra
}

@test "quorum: a spare slot never seen is left out at once; once it beats, it is waited for as a member" {
	"$PYTHON" -c "$PYREC
rng = np.random.default_rng(7)
m = rng.standard_normal(500).astype(np.float32)
for t in (0, 1):
    open('m%d.rec' % t, 'wb').write(st.encode(m, name='m:500', step=t))
    for i in (1, 2, 3):
        a = rng.standard_normal(500).astype(np.float32)
        np.save('a%d_%d.npy' % (i, t), a)
        open('a%d_%d.rec' % (i, t), 'wb').write(st.encode(a, name='m:500', step=t, samples=8))
"
	for i in 1 2 3; do
		for t in 0 1; do
			spirt-store -s s$i put model/m@$t m$t.rec
			spirt-store -s s$i put agg/$t a${i}_$t.rec
		done
	done
	pathpeers 1 3
	sed -i '3s/$/ spare/' peers
	for s in s1 s2; do
		for m in p1 p2; do
			spirt-beat -q -s $s -c 1 -t 0 beat $m
		done
		spirt-beat -q -s $s --suspect 300000 --dead 600000 -c 1 watch
	done
	# p3 never beat: no wait for it (a member never seen is waited for
	# up to the deadline: --deadline 600000 would be ten minutes)
	x() {
		SPIRT_KEY=p$1.key SPIRT_ID=p$1 SPIRT_RUN=r1 spirt-peer exchange \
		    -m m -s s$1 -P peers -t "$2" --beats --deadline 600000
	}
	x 2 0 2>err2 &
	x2=$!
	BG=$x2
	run -0 --separate-stderr timeout 120 bash -c "$(declare -f x); x 1 0"
	wait "$x2"
	grep -qF -- "peer p3 left out: late: spare: it has not joined" <<<"$stderr"
	run -0 spirt-store -s s1 get gagg/0/round
	assert_output --partial 'peer=p3 late: spare: it has not joined'
	assert_output --partial 'peer=p2 used'
	# p3 beats: a member like the others, waited for at step 1
	for s in s1 s2 s3; do
		for m in p1 p2 p3; do
			spirt-beat -q -s $s -c 1 -t 0 beat $m
		done
		spirt-beat -q -s $s --suspect 300000 --dead 600000 -c 1 watch
	done
	x 1 1 2>err1 &
	x1=$!
	x 2 1 2>err2 &
	x2=$!
	BG="$x1 $x2"
	until_ 300 spirt-store -s s1 get xagg/1/p1 >/dev/null
	until_ 300 spirt-store -s s2 get xagg/1/p2 >/dev/null
	run -66 spirt-store -s s1 get gagg/1
	run -0 timeout 120 bash -c "$(declare -f x); x 3 1"
	wait "$x1"
	wait "$x2"
	run -0 spirt-store -s s1 get gagg/1/round
	assert_output --partial 'peer=p3 used'
}

# train I [TOKEN GROUP]: slot I's driver (STEPS steps of the peers file
# peers, the data in $BATS_FILE_TMPDIR/data, its key pI.key, its token
# and group key pI.tok and group.pub unless given), its functions'
# samples in logI, its digests kept
train() {
	SPIRT_KEY=p$1.key SPIRT_TOKEN=${2:-p$1.tok} \
	    SPIRT_GROUP=${3:-group.pub} \
	    SPIRT_SAMPLE_LOG=$PWD/log$1 exec timeout 600 spirt-train -s s$1 \
	    -n 2 -b 20 -e $((STEPS / 8)) --data "$BATS_FILE_TMPDIR/data" \
	    --peers peers --peer $1 --steps $STEPS --eval-every $STEPS \
	    --deadline 30000 --beat 200 --keep-digests
}

@test "spirt-train --beat: a 4th peer joins a running group of 3 at an epoch's first step, one leaves at a later one: one model, every sample once an epoch; a token of another group is refused" {
	STEPS=96
	smalldata "$BATS_FILE_TMPDIR/data"
	# four slots over HTTP on loopback, p3 a spare: the group key, each
	# slot's key and invite token
	httppeers 4
	sed -i '4s/$/ spare/' peers
	# a token for p3's key from another group
	spirt-key keygen -p other.pub other.key >/dev/null
	spirt-key invite -o p3.bad -g other.key -i p3 -r r1 "$(cat p3.hex)"
	# (4 slots of 2 functions: shards of 150 samples, epochs of 8 steps)
	for i in 0 1 2; do
		train $i >o$i 2>e$i &
		eval "pid$i=\$!"
	done
	BG="$pid0 $pid1 $pid2"
	until_ 900 model_at s0 8 || { tail -n 20 e0 >&2; false; }
	# p3 with a token the group did not sign: every member refuses it,
	# and its driver stops, 65, before any step
	rc=0
	(train 3 p3.bad other.pub) >o3bad 2>e3bad || rc=$?
	[ "$rc" -eq 65 ] || { echo "exit $rc" >&2; cat e3bad >&2; false; }
	grep -Eq "^spirt-train: joining: --peers peers: p[0-2] at (http://127.0.0.1:[0-9]+) refused this peer: \1/v1/hs: HTTP 403: EUNKNOWNKEY: " e3bad ||
	    { cat e3bad >&2; false; }
	! model_at s3 1
	# (a member's server said why)
	grep -q '^spirt-peer: refused 127.0.0.1:[0-9]*: handshake: EUNKNOWNKEY$' e0 e1 e2
	rm -rf s3 s3.train-mlp.tsv log3
	# p3 with its invite token: it joins at an epoch's first step
	train 3 >o3 2>e3 &
	pid3=$!
	BG="$BG $pid3"
	until_ 1800 grep -q 'rejoined at step' e3 || { cat e3 >&2; false; }
	j=$(sed -n 's/.*rejoined at step \([0-9]*\):.*/\1/p' e3)
	[ $((j % 8)) -eq 0 ]
	# p1 is asked to leave: it leaves at its next epoch's first step
	spirt-train -s s1 --leave
	wait $pid1 || { cat e1 >&2; false; }
	[ ! -e s1.leave ]
	grep -q 'leaving, as asked' e1 || { cat e1 >&2; false; }
	l=$(sed -n 's/.*step \([0-9]*\): leaving, as asked.*/\1/p' e1)
	[ $((l % 8)) -eq 0 ] && [ "$l" -gt "$j" ] && [ "$l" -lt "$STEPS" ]
	[ "$(newest_model s1)" -eq "$l" ]
	for i in 0 2 3; do
		eval "wait \$pid$i" || { cat e$i >&2; false; }
	done
	# one model: the same model@STEPS on the three that stayed; every
	# step's digests in p0's store name one model, signed by the members
	# of that step: p0 p1 p2 before j, and p3 from j, p1 until l
	h=$(spirt-store -s s0 get model/mlp@$STEPS | md5sum)
	for i in 2 3; do
		[ "$(spirt-store -s s$i get model/mlp@$STEPS | md5sum)" = "$h" ]
	done
	run -0 --separate-stderr spirt-peer verify -s s0 -m mlp -g group.pub
	# (a newcomer slow on a loaded machine may be cut as a straggler
	# after it joined, and join again at a later epoch's first step: from
	# its first join to its last, p3 is in a round or not; p0 may not
	# keep the digest of a round p3 joined and then missed)
	jl=$(sed -n 's/.*rejoined at step \([0-9]*\):.*/\1/p' e3 | tail -n 1)
	for t in $(seq 0 $((STEPS - 1))); do
		w="p0 p1 p2"
		[ "$t" -lt "$j" ] || w="p0 p1 p2 p3"
		[ "$t" -lt "$j" ] || [ "$t" -ge "$jl" ] ||
			w="p0 p1 p2( p3( \(no digest\))?)?"
		[ "$t" -lt "$l" ] || w="p0 p2 p3"
		[[ "${lines[$t]}" =~ ^"step $t: holds: model "[0-9a-f]{64}" ("(kept|not kept)"): "$w$ ]] ||
			fail "line $t: ${lines[$t]}"
	done
	# p1's last model, model@l, is the one the digests of step l name
	spirt-store -s s1 get -f model/mlp@$l >left.rec
	want=$("$PYTHON" "$BATS_TEST_DIRNAME/vhash.py" left.rec)
	assert_line --index "$l" --regexp "^step $l: holds: model $want "
	# the spare's workers (6, 7) out of every epoch before j, from its
	# first round; p1's (2, 3) from l on, with no wait for it
	grep -q "step 1: peers p3 out of the round of step 0" e0 ||
		{ cat e0 >&2; false; }
	grep -q "step $((l + 1)): peers p1 out of the round of step $l" e0 ||
		{ cat e0 >&2; false; }
	# (its last beat said it stops: dead at once, never suspect)
	for i in 0 2 3; do
		grep -q 'p1: dead: it stopped' e$i || { cat e$i >&2; false; }
		! grep -q 'p1: suspect' e$i
	done
	! grep -q 'was left out of the round' e0 e2 e3
	# every sample once an epoch: p0's and p2's, p1's before l, p3's
	# from j
	coverage "$STEPS" 8 8 150 log0 log2 log1:0:"$l" log3:"$j"
	! pgrep -f "spirt-beat.*$PWD/s" >/dev/null
}
