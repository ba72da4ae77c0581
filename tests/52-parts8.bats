#!/usr/bin/env bats
# 52-parts8: the partitioned exchange at eight peers (issue 36's scale):
# eight exchanges by path, one owner stopped mid-round and covered by the
# next member; then eight peers in network namespaces training over HTTP,
# one owner lying from a step on: caught, proven, excluded, and the seven
# others one model at every step (their signed digests), every sample
# once an epoch

load helper
load netns
load coverage

teardown() {
	netns_teardown
	return 0
}

# stores8 SEED: m0.rec and a1.rec..a8.rec (4003 values, samples 32, from
# SEED) in stores s1..s8, keys p1..p8, a peers file naming them by path
stores8() {
	"$PYTHON" -c "$PYREC
rng = np.random.default_rng($1)
n = 4003
open('m0.rec', 'wb').write(st.encode(rng.standard_normal(n).astype(np.float32), name='m:%d' % n, step=0))
for i in range(1, 9):
    open('a%d.rec' % i, 'wb').write(st.encode(rng.standard_normal(n).astype(np.float32), name='m:%d' % n, step=0, samples=32))
"
	peerstores 8
}

@test "exchange --parts, 8 peers: an owner stopped mid-round is covered by the next member; all combine what all-to-all combines" {
	local n=8 i
	stores8 11
	for i in $(seq $n); do
		xch $i -P peers --min-peers $n
	done
	for i in $(seq $n); do
		wait "$(eval echo \$pid$i)" || { cat err$i >&2; return 1; }
	done
	spirt-store -s s1 get gagg/0 >all.rec
	for i in $(seq $n); do
		rm -rf s$i
	done
	peerstores $n
	# p5 (part 4 of 8) stops itself once it pulled its inputs, before it
	# combines its part: p6, next in order, covers it
	SPIRT_XSTOP=combine xch 5 -P peers --parts --deadline 3000
	for i in 1 2 3 4 6 7 8; do
		xch $i -P peers --parts --deadline 3000
	done
	for i in 1 2 3 4 6 7 8; do
		wait "$(eval echo \$pid$i)" ||
		    { cat err$i >&2; kill -9 $pid5; return 1; }
	done
	kill -CONT $pid5
	wait $pid5 || { cat err5 >&2; return 1; }
	for i in $(seq $n); do
		spirt-store -s s$i get gagg/0 >part$i.rec
		cmp all.rec part$i.rec
	done
	grep -q 'step 0: peer p5: part 4 of 8 covered by p6 (its part not there before the deadline)' err6
	for i in 1 2 3 4 7 8; do
		grep -q 'step 0: peer p5: part 4 of 8 covered by p6' err$i ||
		    { cat err$i >&2; false; }
	done
}

@test "exchange --parts, 8 peers: the round again without a proven liar, the first records pulled stale: all seven combine one gagg/t" {
	local n=8 q
	stores8 13
	# p3 lies; its checkers prove it (every part checked): every
	# member's round fails (65)
	SPIRT_XLIE=@0 xch 3 -P peers --parts --check-parts 8 --deadline 5000
	for q in 1 2 4 5 6 7 8; do
		xch $q -P peers --parts --check-parts 8 --deadline 5000
	done
	for q in $(seq $n); do
		rc=0
		wait "$(eval echo \$pid$q)" || rc=$?
		[ "$rc" -eq 65 ] || { cat err$q >&2; return 1; }
	done
	grep -q 'step 0: p3, the owner of part 2 of 8, signed a combination its signed inputs do not make' err1
	# the seven again without it, as spirt-train runs it: each finds
	# the others' input records of the round before (eight members) at
	# first, and asks again those alone until they are cut again (a
	# pass that asked them again reset the records already pulled:
	# "no such key" at the deadline)
	grep -v '^p3 ' peers >peers7
	for q in 1 2 4 5 6 7 8; do
		xch $q -P peers7 --parts --deadline 5000
	done
	for q in 1 2 4 5 6 7 8; do
		wait "$(eval echo \$pid$q)" || { cat err$q >&2; return 1; }
	done
	spirt-store -s s1 get gagg/0 >g1.rec
	for q in 2 4 5 6 7 8; do
		spirt-store -s s$q get gagg/0 | cmp g1.rec -
	done
	# the mean of the seven's aggregates, not the eight's
	"$PYTHON" -c "$PYREC
a = [load('a%d.rec' % i)['a'].astype(np.float64) for i in (1, 2, 4, 5, 6, 7, 8)]
g = load('g1.rec')['a']
assert np.allclose(g, np.mean(a, axis=0), atol=1e-5), abs(g - np.mean(a, axis=0)).max()
"
}

PORT=7081

@test "spirt-train --exchange parts, 8 peers in namespaces: a lying owner is caught, proven and excluded; the others one model at every step, every sample once an epoch" {
	netns_require
	local n=8 steps=20 liar=3 i
	smalldata "$BATS_FILE_TMPDIR/data"
	netns_setup $n
	netns_peers $n $PORT
	allowlist 1 $n
	spirt-shard -s base -q -n $n --seed 1 \
	    "$BATS_FILE_TMPDIR/data/train-images-idx3-ubyte.gz" \
	    "$BATS_FILE_TMPDIR/data/train-labels-idx1-ubyte.gz"
	spirt-shard -s base -q -d test \
	    "$BATS_FILE_TMPDIR/data/t10k-images-idx3-ubyte.gz" \
	    "$BATS_FILE_TMPDIR/data/t10k-labels-idx1-ubyte.gz"
	# (1200 samples over 8 workers of batch 15: epochs of 10 steps; p3
	# lies from step 12, mid-epoch 1; every part checked, so it is
	# caught in the round it lies: with one part drawn a round, as
	# shipped, in a round of 8 on average)
	for i in $(seq $n); do
		cp -r base s$i
		lie=
		[ $i -ne $liar ] || lie=@12
		netns_exec $i env SPIRT_KEY="$PWD/p$i.key" \
		    SPIRT_TOKEN="$PWD/p$i.tok" SPIRT_GROUP="$PWD/group.pub" \
		    SPIRT_XLIE=$lie SPIRT_SAMPLE_LOG="$PWD/log$i" \
		    SPIRT_CHECK_PARTS=$n \
		    timeout 600 spirt-train -q -s "$PWD/s$i" -n 1 -b 15 \
		    --peers "$PWD/peers" --peer $((i - 1)) --steps $steps \
		    --eval-every $steps --deadline 60000 --exchange parts \
		    --keep-digests >o$i 2>e$i &
		eval "pid$i=\$!"
	done
	rc=0
	wait "$(eval echo \$pid$liar)" || rc=$?
	[ "$rc" -eq 65 ] || { cat e$liar >&2; false; }
	grep -q "this peer, the owner of part $((liar - 1)) of $n, signed a combination its signed inputs do not make" e$liar
	# the lie's step: the first the others proved (every member proves
	# the same step: the checkers' proof reaches all)
	for i in $(seq $n); do
		[ $i -ne $liar ] || continue
		wait "$(eval echo \$pid$i)" || { cat e$i >&2; false; }
		grep -q "step 12: p$liar, the owner of part $((liar - 1)) of $n, signed a combination its signed inputs do not make" e$i ||
		    { cat e$i >&2; false; }
		grep -q "step 12: p$liar signed a wrong combination of its part, proven (the proof above): it is out of the run" e$i
		grep -q "step 13: the workers $((liar - 1)) of p$liar: their samples from step 12 go to the live ones" e$i
	done
	# one model at every step: the seven honest peers' chains name the
	# same model hash at each step, and hold to the last
	logs=
	for i in $(seq $n); do
		[ $i -ne $liar ] || continue
		run -0 --separate-stderr spirt-peer verify -s s$i -m mlp -a allow
		assert_line --index $steps "steps 0..$((steps - 1)) of run r1: the chain holds, $steps steps: $(seq -f 'p%g' -s ' ' $n)"
		printf '%s\n' "${lines[@]}" |
		    sed -n 's/^\(step [0-9]*\): holds: model \([0-9a-f]*\).*/\1 \2/p' >chain$i
		[ "$(wc -l <chain$i)" -eq $steps ]
		cmp chain1 chain$i
		[ "$(spirt-store -s s$i get model/mlp@$steps | md5sum)" = \
		    "$(spirt-store -s s1 get model/mlp@$steps | md5sum)" ]
		logs="$logs log$i"
	done
	# the liar contributed before step 12, not from it on
	run -0 --separate-stderr spirt-peer verify -s s1 -m mlp -a allow
	assert_line --index 11 --partial " p$liar"
	refute_line --index 12 --partial " p$liar"
	# every sample once an epoch: the seven's, and the liar's before 12
	coverage $steps 10 $n 150 $logs log$liar:0:12
}
