#!/usr/bin/env bats
# 56-failures: the quorum of a step from heartbeats (spirt-peer exchange
# --beats over spirt-beat's watcher): a dead peer is left out at once and
# the round completes with the rest; the set is reused while unchanged;
# a minority stops with 75; a death cancels the wait for it; stragglers
# are cut at the straggler deadline.  No assertion is on time: each wait
# is for a state, bounded.

load helper
load coverage

teardown() {
	for p in $BG; do
		kill -TERM "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	:
}


# stores s1..s3 with the same model/m@0..2 and each its own agg/0..2,
# keys p1..p3, and a peers file naming them by path
peers3() {
	"$PYTHON" -c "$PYREC
rng = np.random.default_rng(7)
m = rng.standard_normal(500).astype(np.float32)
for t in (0, 1, 2):
    open('m%d.rec' % t, 'wb').write(st.encode(m, name='m:500', step=t))
    for i in (1, 2, 3):
        a = rng.standard_normal(500).astype(np.float32)
        np.save('a%d_%d.npy' % (i, t), a)
        open('a%d_%d.rec' % (i, t), 'wb').write(st.encode(a, name='m:500', step=t, samples=8))
"
	for i in 1 2 3; do
		for t in 0 1 2; do
			spirt-store -s s$i put model/m@$t m$t.rec
			spirt-store -s s$i put agg/$t a${i}_$t.rec
		done
	done
	pathpeers 1 3
}

# alive3: peers3, and every member alive in every store's watcher
alive3() {
	peers3
	for s in s1 s2 s3; do
		beat1 $s p1 p2 p3
		look $s
	done
}

# beating3: peers3; in every store p1..p3 beat every 100 ms and its
# watcher suspects a silence of 700 ms (all in the background, stopped by
# teardown); once each watcher sees all three live, step 0 by all three
beating3() {
	local s m x1 x2
	peers3
	for s in s1 s2 s3; do
		for m in p1 p2 p3; do
			spirt-beat -q -s $s -B 100 -t 0 beat $m &
			BG="$BG $!"
		done
		spirt-beat -q -s $s -B 100 --suspect 700 --dead 600000 watch &
		BG="$BG $!"
	done
	for s in s1 s2 s3; do
		until_ 100 sh -c "spirt-beat -s $s ls | grep -c live | grep -qx 3"
	done
	xch 1 0 --deadline 60000 &
	x1=$!
	xch 2 0 --deadline 60000 &
	x2=$!
	xch 3 0 --deadline 60000
	wait "$x1"
	wait "$x2"
}

# catchup STORE ARG...: p1 and p2 beat once into STORE, p3 once with
# --status catchup and the ARGs, then STORE's watcher looks
catchup() {
	local s=$1
	shift
	beat1 "$s" p1 p2
	spirt-beat -q -s "$s" -c 1 "$@" --status catchup beat p3
	look "$s"
}

# xch I T ARGS...: peer I's exchange of step T, with the quorum of beats
xch() {
	local i=$1 t=$2
	shift 2
	SPIRT_KEY=p$i.key SPIRT_ID=p$i SPIRT_RUN=r1 spirt-peer exchange -m m \
	    -s s$i -P peers -t "$t" --beats "$@"
}

# beat1 STORE MEMBER...: one beat of each member into STORE
beat1() {
	local s=$1 m
	shift
	for m in "$@"; do
		spirt-beat -q -s "$s" -c 1 -t 0 beat "$m"
	done
}

# stopped STORE MEMBER: MEMBER beats into STORE, then stops (its last
# beat says so)
stopped() {
	spirt-beat -q -s "$1" -t 0 beat "$2" &
	local p=$!
	until_ 100 caught "$p" 15
	until_ 100 spirt-store -s "$1" get beat/$2 >/dev/null
	kill -TERM "$p"
	wait "$p"
}

# look STORE: one pass of its watcher (the thresholds of a run that
# never waits for them: only a beat that says it stops is dead)
look() {
	spirt-beat -q -s "$1" --suspect 300000 --dead 600000 -c 1 watch
}

# round STORE T: the text of gagg/T/round
round() {
	spirt-store -s "$1" get "gagg/$2/round" | tr -c '[:print:]\n' ' '
}

# received STORE T ID: the peers that ID's signed digest of step T, in
# STORE, says ID received (docs/protocol.md, "Signed digests")
received() {
	spirt-store -s "$1" get "digest/$2/$3" >dg.rec
	"$PYTHON" -c "$PYREC
b = bytes(load('dg.rec')['a'])
assert b[:4] == b'SPDG'
n = int.from_bytes(b[6:8], 'little')
e = int.from_bytes(b[16:20], 'little')
print(' '.join(b[184 + n + 64 * i:184 + n + 64 * i + 32].rstrip(b'\\0').decode()
    for i in range(e)))"
}

# gagg_is STORE T I...: gagg/T is the mean of peers I...'s agg/T
gagg_is() {
	local s=$1 t=$2
	shift 2
	spirt-store -s "$s" get "gagg/$t" >g.rec
	"$PYTHON" -c "$PYREC
want = np.mean([np.load('a%s_$t.npy' % i).astype(np.float64) for i in '$*'.split()], axis=0)
d = np.abs(load('g.rec')['a'] - want).max()
assert d <= 1e-6, 'maxdiff %g' % d
"
}

@test "quorum: a dead peer is left out at once; the set is reused; a minority stops with 75" {
	peers3
	for s in s1 s2; do
		beat1 $s p1 p2
		stopped $s p3
		look $s
	done
	run -0 spirt-beat -s s1 ls
	assert_line --regexp '^p3	peer	dead	'
	# p3's store has its aggregate, but p3 is dead: nobody asks for it
	xch 2 0 2>err2 &
	x2=$!
	run -0 --separate-stderr xch 1 0
	grep -qF -- "peer p3 left out: late: dead: no beat for" <<<"$stderr"
	wait "$x2"
	gagg_is s1 0 1 2
	gagg_is s2 0 1 2
	run -0 round s1 0
	assert_line 'peer=p2 used'
	assert_line --regexp '^peer=p3 late: dead: no beat for [0-9.]+ s$'
	assert_line 'quorum=changed'
	assert_line --regexp '^xms=[0-9.]+$'
	# step 1: the last round's set {p1, p2} is alive: reused as it is
	xch 1 1 &
	x1=$!
	run -0 xch 2 1
	wait "$x1"
	run -0 round s2 1
	assert_line 'quorum=reused'
	gagg_is s2 1 1 2
	# step 2: p1 stops too; p2 alone is not more than half of {p1, p2}
	stopped s2 p1
	look s2
	before=$(store_digest s2)
	run -75 --separate-stderr xch 2 2 --deadline 1000
	grep -qF -- "step 2: a minority alive: 1 of the last round's 2 members (p2), and more than half are needed: this peer stops" <<<"$stderr"
	run -66 spirt-store -s s2 get gagg/2
	# p1 came back: the round goes on (p3 is still out)
	beat1 s2 p1
	look s2
	xch 1 2 &
	x1=$!
	run -0 xch 2 2
	wait "$x1"
	gagg_is s2 2 1 2
}

@test "decision: a digest lost on the way to one member only: both apply one step (issue 12)" {
	alive3
	# p3's digest of step 0 reaches p1 and is lost on its way to p2
	# (the link to p3 went down then, as in tests/56-partition), and
	# p3's round record reaches neither: p1 combines {p1,p2,p3}, p2
	# (p3 declared dead meanwhile) {p1,p2}.  Before the decision both
	# applied their own, and stopped at the next step (models differ
	# 1 to 1)
	xch 3 0 --deadline 120000 >out3 2>err3 &
	x3=$!
	SPIRT_XDROP='gagg/0/round@p3' xch 1 0 --deadline 120000 >out1 2>err1 &
	x1=$!
	SPIRT_XDROP='digest/0/p3@p3 gagg/0/round@p3' \
	    xch 2 0 --deadline 120000 >out2 2>err2 &
	x2=$!
	until_ 600 spirt-store -s s1 get digest/0/p3 >/dev/null
	until_ 600 spirt-store -s s2 get digest/0/p2 >/dev/null
	for s in s1 s2; do
		stopped $s p3
		look $s
	done
	wait "$x1" || { cat err1; false; }
	wait "$x2" || { cat err2; false; }
	wait "$x3" || :
	# p2's record: p1 combined p3 too; p2 left it out, then adopted
	# p1's combination (a tie, 1 to 1, p3 out: the lowest id's)
	run -0 round s2 0
	assert_line --regexp '^peer=p3 '
	assert_line 'adopted=p1'
	run -0 round s1 0
	refute_line --regexp '^adopted='
	assert_line 'peer=p3 used'
	assert_line 'state=decided'
	gagg_is s1 0 1 2 3
	gagg_is s2 0 1 2 3
	h1=$(spirt-store -s s1 get gagg/0 | b2sum)
	h2=$(spirt-store -s s2 get gagg/0 | b2sum)
	[ "$h1" = "$h2" ]
}

@test "decision: in doubt, a member follows one that decided by a majority it cannot see" {
	alive3
	# p3's digest and round record are lost on their way to p1 only:
	# p2 and p3 combine {p1,p2,p3} and decide it (two of three hold
	# it); p1 combines {p1,p2}, sees p2's and not p3's: in doubt, and
	# the lowest id, its own would win a tie; it follows p2's decision
	xch 3 0 --deadline 120000 >out3 2>err3 &
	x3=$!
	xch 2 0 --deadline 120000 >out2 2>err2 &
	x2=$!
	SPIRT_XDROP='digest/0/p3@p3 gagg/0/round@p3' \
	    xch 1 0 --deadline 120000 >out1 2>err1 &
	x1=$!
	# (p2 decides without p1: p3's record and its own hold the same)
	until_ 600 sh -c 'spirt-store -s s2 get gagg/0/round 2>/dev/null |
	    grep -aq "^state=decided"'
	stopped s1 p3
	look s1
	wait "$x1" || { cat err1; false; }
	wait "$x2" || { cat err2; false; }
	wait "$x3" || { cat err3; false; }
	run -0 round s1 0
	assert_line --regexp '^peer=p3 '
	assert_line 'adopted=p2'
	assert_line 'state=decided'
	run -0 round s2 0
	refute_line --regexp '^adopted='
	assert_line 'peer=p3 used'
	# the decision it names: the values' hash of the gagg/0 value
	assert_line "gagg=$(spirt-store -s s2 get gagg/0 | "$PYTHON" "$BATS_TEST_DIRNAME/vhash.py")"
	for s in s1 s2 s3; do
		gagg_is $s 0 1 2 3
	done
}

@test "decision: a majority one member counted is never broken by a tie the others break without it (chaos find)" {
	alive3
	# p2 and p3 combine {p1,p2,p3}; p1, whose pull of p3's digest is
	# lost, {p1,p2} once p3 is declared dead in its view.  p2 sees p3's
	# record: two of three hold its combination.  p2's record is lost
	# on its way to p1 and p3, and p2 is declared dead in their views:
	# they see each other only, one to one.  Before the lock, p2
	# applied its own at once and p1 and p3 broke the tie to p1's: two
	# steps 0 (chaos, seed 23338: "model@1 differs")
	xch 2 0 --deadline 120000 >out2 2>err2 &
	x2=$!
	SPIRT_XDROP='gagg/0/round@p2' xch 3 0 --deadline 120000 >out3 2>err3 &
	x3=$!
	SPIRT_XDROP='digest/0/p3@p3 gagg/0/round@p2' \
	    xch 1 0 --deadline 120000 >out1 2>err1 &
	x1=$!
	until_ 600 spirt-store -s s2 get gagg/0 >/dev/null
	until_ 600 spirt-store -s s3 get gagg/0 >/dev/null
	stopped s1 p3
	look s1
	until_ 600 spirt-store -s s1 get gagg/0 >/dev/null
	# (p3 is back in p1's view: p1 sees its record)
	beat1 s1 p3
	look s1
	for s in s1 s3; do
		stopped $s p2
		look $s
	done
	wait "$x1" || { cat err1; false; }
	wait "$x2" || { cat err2; false; }
	wait "$x3" || { cat err3; false; }
	# one step 0 in all three: p1's, by the tie (p2 was locked, not
	# applied, and follows)
	for s in s1 s2 s3; do
		run -0 round $s 0
		assert_line 'state=decided'
		gagg_is $s 0 1 2
	done
	run -0 round s2 0
	assert_line --regexp '^adopted=p[13]$'
	run -0 round s3 0
	assert_line 'adopted=p1'
	h1=$(spirt-store -s s1 get gagg/0 | b2sum)
	for s in s2 s3; do
		[ "$(spirt-store -s $s get gagg/0 | b2sum)" = "$h1" ]
	done
}

@test "quorum: a peer declared dead while the round waits for it is given up at once" {
	peers3
	# p3 never publishes step 1, and beats on until it is killed
	for s in s1 s2; do
		beat1 $s p1 p2
		look $s
		spirt-beat -q -s $s -B 100 -t 1 beat p3 &
		BG="$BG $!"
		spirt-beat -q -s $s --suspect 300000 --dead 600000 -B 100 watch &
		BG="$BG $!"
	done
	for s in s1 s2; do
		until_ 100 sh -c "spirt-beat -s $s ls | grep -q '^p3	peer	live'"
	done
	# (gagg/0/round is absent: the first round waits up to --deadline)
	xch 1 1 --deadline 120000 >out1 2>err1 &
	x1=$!
	xch 2 1 --deadline 120000 >out2 2>err2 &
	x2=$!
	# both wait for p3; then p3's beaters stop (its last beats say so)
	until_ 100 spirt-store -s s1 get xagg/1/p1 >/dev/null
	until_ 100 spirt-store -s s2 get xagg/1/p2 >/dev/null
	for p in $BG; do
		if ps -o args= -p "$p" | grep -q 'beat p3'; then
			kill -TERM "$p"
			wait "$p"
		fi
	done
	wait "$x1"
	wait "$x2"
	grep -q "peer p3 left out: late: xagg/1/p3: given up: declared dead while the round waited for it" err1
	grep -q "peer p3 left out: late: xagg/1/p3: given up: declared dead" err2
	gagg_is s1 1 1 2
	gagg_is s2 1 1 2
	# with --beats what each received is stored (a rerun after a death
	# must not depend on the others), as what it published
	cmp <(spirt-store -s s1 get xagg/1/p2) <(spirt-store -s s2 get xagg/1/p2)
	cmp <(spirt-store -s s2 get xagg/1/p1) <(spirt-store -s s1 get xagg/1/p1)
}

@test "quorum: a straggler is cut at twice the last round's time, at least the suspect threshold" {
	# everyone beats; the watchers' suspect threshold is the floor
	beating3
	# step 1: p3 is alive but never delivers (its aggregate is gone)
	spirt-store -s s3 rm agg/1
	xch 2 1 --deadline 60000 2>/dev/null &
	x2=$!
	run -0 --separate-stderr xch 1 1 --deadline 60000
	wait "$x2"
	xms=$(round s1 0 | sed -n 's/^xms=//p')
	want=$(awk -v x="$xms" 'BEGIN { d = 2 * x; if (d < 700) d = 700; else d = int(d) + 1; print d }')
	grep -qF -- "peer p3 left out: late: xagg/1/p3:" <<<"$stderr"
	grep -qF -- "a straggler: no answer in $want ms" <<<"$stderr"
}

@test "quorum: all or nothing: a peer the others leave out combines what they combined, without its own" {
	peers3
	# p3 catches up, with no step named yet: joining for p1 and p2, who
	# do not wait for it; p3 sees them alive
	for s in s1 s2; do
		catchup $s
	done
	beat1 s3 p1 p2 p3
	look s3
	run -0 spirt-beat -s s1 ls
	assert_line --regexp '^p3	peer	joining	'
	xch 1 0 2>err1 &
	x1=$!
	xch 2 0 2>err2 &
	x2=$!
	run -0 --separate-stderr xch 3 0
	wait "$x1"
	wait "$x2"
	grep -q "peer p3 left out: late: joining: it catches up" err1
	# every peer combined p1's and p2's: one gagg/0, one model next
	for s in s1 s2 s3; do gagg_is $s 0 1 2; done
	run -0 round s3 0
	assert_line 'peer=p3 out'
	assert_line 'peer=p1 used'
	assert_line 'peer=p2 used'
	# the same bytes everywhere, so the same model next
	h=$(spirt-store -s s1 get gagg/0 | md5sum)
	[ "$(spirt-store -s s2 get gagg/0 | md5sum)" = "$h" ]
	[ "$(spirt-store -s s3 get gagg/0 | md5sum)" = "$h" ]
	# and the next round's healthy set is {p1, p2} on every peer
	run -0 round s1 0
	refute_line --partial 'peer=p3 used'
}

@test "quorum: a peer left out that cut a member as a straggler pulls it after all: what the members combined" {
	beating3
	# step 1: p1 and p2 go on without p3, which is late
	xch 1 1 --deadline 60000 2>/dev/null &
	x1=$!
	xch 2 1 --deadline 60000 2>/dev/null
	wait "$x1"
	gagg_is s1 1 1 2
	# p3 then reaches p2 only through s2b, where p2's aggregate is not
	# yet: p3 cuts it as a straggler, and finds itself out of the step
	spirt-store -s s2b put model/m@1 m1.rec
	sed "s|^p2 .*|p2 $PWD/s2b|" peers >peers3
	SPIRT_KEY=p3.key SPIRT_ID=p3 SPIRT_RUN=r1 spirt-peer exchange -m m \
	    -s s3 -P peers3 -t 1 --beats --deadline 60000 >out3 2>err3 &
	x3=$!
	until_ 300 spirt-store -s s3 get digest/1/p3 >/dev/null
	# p1's digest says p1 received p2's: p3 pulls it after all
	for k in xagg/1/p2 digest/1/p2; do
		spirt-store -s s2 get $k >k.rec
		spirt-store -s s2b put $k k.rec
	done
	wait "$x3" || { cat err3 >&2; false; }
	run -0 round s3 1
	assert_line 'peer=p3 out'
	assert_line 'peer=p2 used'
	# one gagg/1 everywhere
	gagg_is s3 1 1 2
	h=$(spirt-store -s s1 get gagg/1 | md5sum)
	[ "$(spirt-store -s s3 get gagg/1 | md5sum)" = "$h" ]
	# (p3's own digest says it did not receive p2's in time)
	run -0 received s3 1 p3
	assert_output 'p1'
}

@test "quorum: a peer that catches up is a member from the step its beat names, waited for there, and after it" {
	peers3
	# p3 will join at step 1: its beat says so to every watcher
	for s in s1 s2 s3; do
		catchup $s -t 1
	done
	run -0 spirt-beat -s s1 ls
	assert_line --regexp '^p3	peer	joining	[0-9.]+	1	'
	# step 0: not yet a member, left out with no wait
	xch 2 0 2>/dev/null &
	x2=$!
	run -0 --separate-stderr xch 1 0
	wait "$x2"
	grep -qF -- "peer p3 left out: late: joining: it joins at step 1" <<<"$stderr"
	gagg_is s1 0 1 2
	# step 1: p1 and p2 publish and wait for it; it comes later
	xch 1 1 2>err1 &
	x1=$!
	xch 2 1 2>err2 &
	x2=$!
	until_ 300 spirt-store -s s1 get xagg/1/p1 >/dev/null
	until_ 300 spirt-store -s s2 get xagg/1/p2 >/dev/null
	run -66 spirt-store -s s1 get gagg/1
	run -0 xch 3 1
	wait "$x1"
	wait "$x2"
	for s in s1 s2 s3; do gagg_is $s 1 1 2 3; done
	run -0 round s3 1
	assert_line 'peer=p3 self'
	# step 2: its beat still names step 1 (its live beats have not come
	# yet), but the last round had it: a member
	xch 1 2 2>/dev/null &
	x1=$!
	xch 2 2 2>/dev/null &
	x2=$!
	run -0 xch 3 2
	wait "$x1"
	wait "$x2"
	for s in s1 s2 s3; do gagg_is $s 2 1 2 3; done
}

@test "quorum: a peer that catches up and misses the step it named is left out after it, with no wait" {
	peers3
	for s in s1 s2; do
		catchup $s -t 0
	done
	# step 0: p3 is a member, and never delivers: the round's deadline
	# leaves it out
	xch 2 0 --deadline 2000 2>/dev/null &
	x2=$!
	run -0 --separate-stderr xch 1 0 --deadline 2000
	wait "$x2"
	grep -qF -- "peer p3 left out: late: xagg/0/p3:" <<<"$stderr"
	gagg_is s1 0 1 2
	# step 1: the step it named went by without it: out at once
	xch 2 1 2>/dev/null &
	x2=$!
	run -0 --separate-stderr xch 1 1
	wait "$x2"
	grep -qF -- "peer p3 left out: late: joining: the step it named, 0, went by without it" <<<"$stderr"
	gagg_is s1 1 1 2
	gagg_is s2 1 1 2
}

# killed_and_back STEPS [stop S]: three peers train STEPS steps with
# heartbeats, on the small data set (epochs of 10 steps); p1 is killed
# mid-run, the others go on; the same command brings it back, and it
# rejoins at an epoch's first step: one model on all three.  With "stop
# S" the rejoiner is stopped (SIGSTOP, its whole process group) for S
# seconds as soon as it has named the step it joins at, longer than the
# dead threshold: it misses that step, names another and joins then.
# Either way every sample is seen once in each epoch, across the peers
# (coverage).
killed_and_back() {
	local steps=$1
	shift
	smalldata "$BATS_FILE_TMPDIR/data"
	pathpeers 0 2
	# train I [LOG]: peer I's driver (a beat every 200 ms: dead after
	# 2 s), its functions' samples in LOG (default log$1)
	train() {
		SPIRT_KEY=p$1.key SPIRT_ID=p$1 SPIRT_RUN=r1 \
		    SPIRT_SAMPLE_LOG=$PWD/${2:-log$1} exec timeout 600 \
		    spirt-train -s s$1 -n 2 -b 20 -e $((steps / 10)) \
		    --data "$BATS_FILE_TMPDIR/data" --peers peers --peer $1 --steps $steps \
		    --eval-every $steps --deadline 60000 --beat 200
	}
	for i in 0 1 2; do
		train $i >o$i 2>e$i &
		eval "pid$i=\$!"
	done
	BG="$pid0 $pid1 $pid2"
	# p1 dies (SIGKILL: its beats stop with it) once it is under way,
	# in the middle of an epoch (the second, third or fourth)
	until_ 600 model_at s1 15
	# ... and not in an epoch's last two steps: a peer out of the round
	# of an epoch's last step loses that batch for the epoch, a gap
	# docs/contracts.md names, which this count would find (frozen, its
	# newest model says where it is; timeout leads a process group)
	while :; do
		kill -STOP -- -$pid1
		n=$(newest_model s1)
		[ $((n % 10)) -ge 8 ] || break
		kill -CONT -- -$pid1
		until_ 600 model_at s1 $((n / 10 * 10 + 11))
	done
	# (the driver itself, under its timeout; then the rest of the group
	# goes on, to see its parent gone)
	kill -KILL $(pgrep -P $pid1) $pid1 2>/dev/null || :
	kill -CONT -- -$pid1 2>/dev/null || :
	wait $pid1 || :
	# the others leave it out and go on past where it was
	until_ 900 model_at s0 45
	# (left out as a straggler, p1 is declared dead at the dead
	# threshold, 2 s: the others may be past 45 by then)
	until_ 100 grep -q 'p1: dead' e0
	# the same command brings it back: it catches up and rejoins
	train 1 log1b >o1b 2>e1b &
	pid1=$!
	BG="$pid0 $pid1 $pid2"
	if [ "${1:-}" = stop ]; then
		until_ 900 grep -q 'joining at step' e1b
		# (timeout leads a process group of its own: the whole peer)
		[ "$(ps -o pgid= -p $pid1)" -eq $pid1 ]
		kill -STOP -- -$pid1
		# (stopped until the others are past the step it named, and
		# then $2 s more: a fixed pause alone let a join whose margin
		# was long enough for slow steps succeed at the first step)
		j1=$(sed -n 's/.*joining at step \([0-9]*\).*/\1/p' e1b | head -n 1)
		until_ 900 model_at s0 $((j1 + 2))
		sleep "$2"
		kill -CONT -- -$pid1
	fi
	wait $pid0 || { cat e0 >&2; false; }
	wait $pid2 || { cat e2 >&2; false; }
	wait $pid1 || { cat e1b >&2; false; }
	grep -q 'caught up from' e1b || { cat e1b >&2; false; }
	grep -q 'rejoined at step' e1b || { cat e1b >&2; false; }
	if [ "${1:-}" = stop ]; then
		# the step it named first went by; it named another
		[ "$(grep -c 'joining at step' e1b)" -ge 2 ] || { cat e1b >&2; false; }
		j1=$(sed -n 's/.*joining at step \([0-9]*\).*/\1/p' e1b | head -n 1)
		! grep -q "rejoined at step $j1:" e1b
	fi
	h=$(spirt-store -s s0 get model/mlp@$steps | md5sum)
	[ "$(spirt-store -s s1 get model/mlp@$steps | md5sum)" = "$h" ]
	[ "$(spirt-store -s s2 get model/mlp@$steps | md5sum)" = "$h" ]
	# the dead peer's workers' samples went to the others at the same
	# steps on both (the rounds' member sets, not their own watchers),
	# and came back at an epoch's first step
	grep 'peers p1 out of the round' e0 >out0
	grep 'peers p1 out of the round' e2 >out2
	[ -s out0 ] || { cat e0 >&2; false; }
	diff <(sed 's/(revision .*//' out0) <(sed 's/(revision .*//' out2)
	grep -q 'of peers out of the last epoch get their samples back' e0
	! grep -q 'was left out of the round' e0 e2
	# every sample once an epoch
	r1=$(sed -n 's/.*peers p1 out of the round of step \([0-9]*\).*/\1/p' e0 | head -n 1)
	j=$(sed -n 's/.*rejoined at step \([0-9]*\):.*/\1/p' e1b)
	[ $((j % 10)) -eq 0 ]
	# (p0's and p2's, p1's of its first life before step r1, the round
	# it was out of first, and of its second from step j, where it
	# rejoined)
	coverage "$steps" 10 6 200 log0 log2 log1:0:"$r1" log1b:"$j"
	# nothing is left running
	! pgrep -f "spirt-beat.*$PWD/s" >/dev/null
}

@test "spirt-train --beat: a peer killed mid-run is left out, the others go on; the same command rejoins it at the step it names, one model" {
	# (long enough for the others not to end before it is back: after
	# step 45 they go on for the 2 s it takes to call it dead, its
	# restart and the margin it names, 0.9 s of their steps; at 40 steps
	# a second, 150 steps ran out, and it only caught up at the end)
	killed_and_back 500
}

@test "spirt-train --beat: a rejoiner stopped at the step it named misses it, names another and rejoins then; one model" {
	# (long enough for the others not to end while it is stopped, and
	# it joins again: its margin doubled after the miss; as above, at 40
	# steps a second)
	killed_and_back 1000 stop 3
}

@test "spirt-train --beat: a peer the other waits for, rolled back, rejoins at the step the other stands at, mid-epoch; one model, every sample once" {
	# Two peers.  Alone, p0 is a minority of the last round's two: each
	# launch of it stops 75 until p1 is back.  p1 comes back behind (its
	# newest versions lost, as a power loss loses the volatile ones),
	# and the round before p0's step combined it, so its share there is
	# still its own: it joins at that step.  Were it to join at the next
	# epoch's first step instead, it would wait for p0 there while p0
	# waits for it here, and neither would end (chaos found it).
	local steps=90 spe=15
	smalldata "$BATS_FILE_TMPDIR/data"
	pathpeers 0 1
	# train I LOG: peer I's driver, its functions' samples in LOG
	train() {
		SPIRT_KEY=p$1.key SPIRT_ID=p$1 SPIRT_RUN=r1 \
		    SPIRT_SAMPLE_LOG=$PWD/$2 exec timeout 300 \
		    spirt-train -s s$1 -n 2 -b 20 -e $((steps / spe)) \
		    --data "$BATS_FILE_TMPDIR/data" --peers peers --peer $1 \
		    --steps $steps --eval-every $steps --deadline 20000 --beat 200
	}
	train 0 log0 >o0 2>e0 &
	pid0=$!
	train 1 log1 >o1 2>e1 &
	pid1=$!
	BG="$pid0 $pid1"
	# p1 dies in the second epoch, past its first step
	until_ 900 model_at s1 $((spe + 5))
	kill -KILL $(pgrep -P $pid1) $pid1 2>/dev/null || :
	wait $pid1 || :
	# p0 stops, a minority
	rc=0
	wait $pid0 || rc=$?
	[ "$rc" -eq 75 ] || { cat e0 >&2; false; }
	grep -q 'a minority' e0 || { cat e0 >&2; false; }
	n=$(newest_model s0)
	# p1 loses its versions from step n - 1 on
	for k in $(spirt-store -s s1 ls model/mlp@ | cut -f1 | sed 's/.*@//'); do
		[ "$k" -lt $((n - 1)) ] ||
		    spirt-store -s s1 rm model/mlp@$k opt/mlp@$k
	done
	[ "$(newest_model s1)" -lt "$n" ]
	# both again, p0 as a supervisor would run it (again on 75)
	(
		for k in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do
			(train 0 log0) >>o0 2>>e0 && exit 0
			rc=$?
			[ "$rc" -eq 75 ] || exit "$rc"
		done
		exit 75
	) &
	pid0=$!
	train 1 log1b >o1b 2>e1b &
	pid1=$!
	BG="$pid0 $pid1"
	wait $pid1 || { cat e1b >&2; tail -n 20 e0 >&2; false; }
	wait $pid0 || { tail -n 40 e0 >&2; false; }
	grep -q "joining at step $n " e1b || { cat e1b >&2; false; }
	grep -q "rejoined at step $n:" e1b || { cat e1b >&2; false; }
	h=$(spirt-store -s s0 get model/mlp@$steps | md5sum)
	[ "$(spirt-store -s s1 get model/mlp@$steps | md5sum)" = "$h" ]
	# every sample once an epoch: p0's, p1's before step n from its
	# first life and from step n from its second
	coverage $steps $spe 4 300 log0 log1:0:$n log1b:$n
	! pgrep -f "spirt-beat.*$PWD/s" >/dev/null
}

@test "spirt-train --beat over HTTP: a peer back after the others' last step catches up from them, who serve until it has the last model" {
	# p2 dies mid-run and comes back once p0 and p1 have taken the last
	# step, its store as if it had died after its last round and before
	# that round's update (the round's gagg there, not the model): the
	# others' servers must not end on seeing that gagg, but on its beats
	# saying it has the last model (chaos: known_behind, 'joining: no
	# other peer answers with a model' on every launch)
	local steps=40 spe=10
	smalldata "$BATS_FILE_TMPDIR/data"
	httppeers 3
	train() {
		SPIRT_KEY=p$1.key SPIRT_TOKEN=p$1.tok SPIRT_GROUP=group.pub \
		    exec timeout 300 spirt-train -s s$1 -n 2 -b 20 \
		    -e $((steps / spe)) --data "$BATS_FILE_TMPDIR/data" \
		    --peers peers --peer $1 --steps $steps --eval-every $steps \
		    --deadline 30000 --beat 200
	}
	for i in 0 1 2; do
		train $i >o$i 2>e$i &
		eval "pid$i=\$!"
	done
	BG="$pid0 $pid1 $pid2"
	until_ 900 model_at s2 15
	kill -KILL $(pgrep -P $pid2) $pid2 2>/dev/null || :
	wait $pid2 || :
	# on a failure, what the peers said (how the lost signal of
	# spirt-train's serve_ready, a69fcc5, was found)
	until_ 1200 model_at s0 $steps || { tail -n 40 e0 e1 e2 >&2; false; }
	until_ 1200 model_at s1 $steps || { tail -n 40 e0 e1 e2 >&2; false; }
	spirt-store -s s0 get -f gagg/$((steps - 1)) >g.rec
	spirt-store -s s2 put gagg/$((steps - 1)) g.rec
	! model_at s2 $steps
	train 2 >o2b 2>e2b &
	pid2=$!
	BG="$pid0 $pid1 $pid2"
	wait $pid2 || { cat e2b >&2; false; }
	wait $pid0 || { cat e0 >&2; false; }
	wait $pid1 || { cat e1 >&2; false; }
	grep -q 'the run ended before this peer could join' e2b || { cat e2b >&2; false; }
	h=$(spirt-store -s s0 get model/mlp@$steps | md5sum)
	[ "$(spirt-store -s s1 get model/mlp@$steps | md5sum)" = "$h" ]
	[ "$(spirt-store -s s2 get model/mlp@$steps | md5sum)" = "$h" ]
	! pgrep -f "spirt-beat.*$PWD/s" >/dev/null
	for e in e0 e1 e2b; do
		grep -q '^spirt-peer: stopped: ' $e || { cat $e >&2; false; }
	done
}

# ---- a death cancels a transfer in flight ----

# trickle_start PORT: a proxy on 127.0.0.1 in front of 127.0.0.1:PORT
# that passes requests at once and answers at 64 KiB/s; its port in
# $tport, and it logs in trickle.log each connection's answer bytes sent,
# and "gone after N" once the client hangs up with N sent
trickle_start() {
	cat >trickle.py <<-'PY'
	import socket, sys, threading, time
	up = int(sys.argv[1])
	ls = socket.socket()
	ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
	ls.bind(("127.0.0.1", 0))
	ls.listen(16)
	log = open("trickle.log", "a", buffering=1)
	print(ls.getsockname()[1], flush=True)
	def pump(a, b):
	    try:
	        while True:
	            d = a.recv(65536)
	            if not d:
	                break
	            b.sendall(d)
	    except OSError:
	        pass
	def serve(c, n):
	    u = socket.create_connection(("127.0.0.1", up))
	    threading.Thread(target=pump, args=(c, u), daemon=True).start()
	    sent = 0
	    try:
	        while True:
	            d = u.recv(4096)
	            if not d:
	                break
	            c.sendall(d)
	            sent += len(d)
	            log.write("conn %d sent %d\n" % (n, sent))
	            time.sleep(len(d) / 65536.0)
	    except OSError:
	        log.write("conn %d gone after %d\n" % (n, sent))
	    c.close()
	    u.close()
	n = 0
	while True:
	    c, _ = ls.accept()
	    n += 1
	    threading.Thread(target=serve, args=(c, n), daemon=True).start()
	PY
	"$PYTHON" trickle.py "$1" >tport 2>trickle.err &
	BG="$BG $!"
	TRICKLE=$!
	until_ 100 test -s tport
	tport=$(cat tport)
}

@test "quorum: a pull in the middle of a large transfer from a peer then stopped and declared dead stops at once" {
	# three peers over HTTP, a model of 1e6 floats; p3 is served through
	# the trickle: its 4 MB aggregate takes about a minute to come
	"$PYTHON" -c "$PYREC
rng = np.random.default_rng(3)
m = rng.standard_normal(1000000).astype(np.float32)
open('m.rec', 'wb').write(st.encode(m, name='m:1000000', step=0))
for i in (1, 2, 3):
    a = rng.standard_normal(1000000).astype(np.float32)
    np.save('a%d.npy' % i, a)
    open('a%d.rec' % i, 'wb').write(st.encode(a, name='m:1000000', step=0, samples=8))
"
	spirt-peer keygen -p group.pub group.key >/dev/null
	: >peers
	for i in 1 2 3; do
		spirt-store -s s$i put model/m@0 m.rec
		spirt-store -s s$i put agg/0 a$i.rec
		spirt-peer keygen -f p$i.key >p$i.hex
		spirt-peer invite -o p$i.tok -g group.key -i p$i -r r1 \
		    "$(cat p$i.hex)"
		mkfifo ready$i
		timeout 300 spirt-peer serve -s s$i -k p$i.key -T p$i.tok \
		    -g group.pub -l 127.0.0.1:0 -F 3 3>ready$i 2>srv$i.log &
		BG="$BG $!"
		eval "srv$i=\$!"
		read -r -t 30 addr <ready$i || { cat srv$i.log >&2; false; }
		if [ $i -eq 3 ]; then
			trickle_start "${addr##*:}"
			addr=127.0.0.1:$tport
		fi
		echo "p$i http://p$i@$addr" >>peers
	done
	# p3 has published its aggregate (as its exchange would)
	spirt-store -s s3 put xagg/0/p3 a3.rec
	# everyone beats into s1 and s2 every 100 ms; their watchers declare
	# a member dead after 1.5 s of silence
	for i in 1 2 3; do
		spirt-beat -q -s s$i -B 100 -t 0 beat p$i "$PWD/s1" "$PWD/s2" &
		BG="$BG $!"
		eval "beat$i=\$!"
	done
	for s in s1 s2; do
		spirt-beat -q -s $s -B 100 --suspect 500 --dead 1500 watch &
		BG="$BG $!"
	done
	for s in s1 s2; do
		until_ 100 sh -c "spirt-beat -s $s ls | grep -c '	live	' | grep -qx 3"
	done
	# the round waits up to 120 s for each, and so may each request
	for i in 1 2; do
		SPIRT_KEY=p$i.key SPIRT_TOKEN=p$i.tok SPIRT_GROUP=group.pub \
		    spirt-peer exchange -m m -s s$i -P peers -t 0 --beats \
		    --deadline 120000 --timeout 120000 >out$i 2>err$i &
		eval "x$i=\$!"
	done
	# both are receiving p3's aggregate (more than 64 KiB of it came);
	# then p3 stops, whole: its server, its trickle, its beater
	until_ 300 sh -c "awk '\$3 == \"sent\" && \$4 > 65536' trickle.log | awk '{ print \$2 }' | sort -u | wc -l | grep -qx 2"
	kill -STOP $srv3 $TRICKLE $beat3
	t0=$(date +%s)
	wait $x1 || { cat err1 >&2; false; }
	wait $x2 || { cat err2 >&2; false; }
	t1=$(date +%s)
	kill -CONT $srv3 $TRICKLE $beat3
	# (a figure, not an assertion: the dead threshold is 1.5 s)
	echo "# the pulls stopped $((t1 - t0)) s after p3 did" >&3
	grep -q "peer p3 left out: late: xagg/0/p3: given up: declared dead while the round waited for it" err1
	grep -q "peer p3 left out: late: xagg/0/p3: given up: declared dead while the round waited for it" err2
	# the round is that of p1 and p2
	for i in 1 2; do
		spirt-store -s s$i get gagg/0 >g.rec
		"$PYTHON" -c "$PYREC
want = (np.load('a1.npy').astype(np.float64) + np.load('a2.npy')) / 2
d = np.abs(load('g.rec')['a'] - want).max()
assert d <= 1e-6, 'maxdiff %g' % d
"
	done
	# the transfers were cut in the middle: both pullers hung up on the
	# trickle before p3's aggregate had come whole
	until_ 100 sh -c "grep -c ' gone after ' trickle.log | grep -qx 2"
	awk '$3 == "gone" { if ($5 >= 4000000) exit 1 }' trickle.log
}

@test "spirt-train --peers over HTTP: a driver killed as it starts its server leaves nothing behind" {
	# The server is spirt-run's child, as the warm tools are.  Here the
	# driver is killed at the first instant its server is seen, before
	# or as it listens; its session must then empty: spirt-run, its
	# SPIRT_PARENT gone, ends the server and the warm tools, and its
	# private directory goes with it.  Three launches.
	smalldata "$BATS_FILE_TMPDIR/data"
	httppeers 2
	# (a session with only zombies left to init is empty)
	empty() {
		[ -z "$(ps -o pid=,ppid=,stat= -s "$drv" |
		    awk '!($3 ~ /^Z/ && $2 == 1)')" ]
	}
	for k in 1 2 3; do
		SPIRT_KEY=p0.key SPIRT_TOKEN=p0.tok SPIRT_GROUP=group.pub \
		    setsid spirt-train -q -s s0 -n 2 -b 20 \
		    --data "$BATS_FILE_TMPDIR/data" --peers peers --peer 0 \
		    --steps 5 --deadline 5000 >o 2>e &
		drv=$!
		BG=$drv
		run -0 timeout 60 "$PYTHON" - "$drv" <<'PY'
import os, signal, sys
d = int(sys.argv[1])
def kids(p):
    try:
        return open("/proc/%d/task/%d/children" % (p, p)).read().split()
    except OSError:
        return []
while True:
    # (the driver gone before its server: a failure, 1)
    os.kill(d, 0)
    for s in kids(d):
        for c in kids(int(s)):
            try:
                a = open("/proc/%s/cmdline" % c).read().split("\0")
            except OSError:
                continue
            if a[0].endswith("spirt-peer") and a[1:2] == ["serve"]:
                os.kill(d, signal.SIGKILL)
                print("hit")
                sys.exit(0)
PY
		wait "$drv" || :
		until_ 100 empty || {
			left=$(ps -o pid=,ppid=,stat=,args= -s "$drv")
			ps -o pid= -s "$drv" | xargs -r kill -KILL
			fail "launch $k ($output): left behind: $left"
		}
		[ -z "$(ls -d "${TMPDIR:-/tmp}"/spirt-train.* 2>/dev/null)" ]
	done
}

@test "spirt-train --peers over HTTP: this peer's server killed mid-run: spirt-run tells the driver, which stops, 75, naming it" {
	# p1 never comes: p0's first round waits (--deadline 60 s) while
	# its server is killed; spirt-run, whose guarded child it is, tells
	# the driver at once, which ends the run, rerun to resume
	smalldata "$BATS_FILE_TMPDIR/data"
	httppeers 2
	SPIRT_KEY=p0.key SPIRT_TOKEN=p0.tok SPIRT_GROUP=group.pub \
	    spirt-train -q -v -s s0 -n 2 -b 20 \
	    --data "$BATS_FILE_TMPDIR/data" --peers peers --peer 0 \
	    --steps 5 --deadline 60000 >o 2>e &
	drv=$!
	BG=$drv
	# its server, once it listens and the first round is asked for
	until_ 300 grep -q '^+ spirt-peer exchange .* <<< 0$' e
	sup=$(pgrep -P "$drv" -x spirt-run)
	srv=$(pgrep -P "$sup" -f '^spirt-peer serve ')
	[ -n "$srv" ]
	a=$(date +%s)
	kill -KILL "$srv"
	s=0
	wait "$drv" || s=$?
	b=$(date +%s)
	[ "$s" -eq 75 ] || { cat e; fail "exit $s"; }
	grep -qx "spirt-train: this peer's spirt-peer serve (pid $srv) died; rerun to resume" e ||
		{ cat e; false; }
	[ $((b - a)) -le 10 ]
	# its private directory is gone, and spirt-run with it
	[ -z "$(ls -d "${TMPDIR:-/tmp}"/spirt-train.* 2>/dev/null)" ]
	! kill -0 "$sup" 2>/dev/null
}
