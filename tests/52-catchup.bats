#!/usr/bin/env bats
# 52-catchup: spirt-peer catch-up, a rejoining peer's fetch: model@T, its
# optimiser state and model state from the source into the store in one
# transaction, printed once; a store that has model@T keeps it; a source
# that has them late is waited for; the join missed (69) when the source
# is dead or past T's round by this store's watcher, or has the model
# without its optimiser state; 75 when it makes no step for --deadline;
# 74 when the store cannot take them; 64 for a bad command line.  A
# refusal stores nothing.  -P: the other peer with the newest model, or
# nothing; --wait for one to answer; --pace, its step a moment later;
# --join, the step to join at; a malformed peers file 65.  peers:
# the peers file's facts for a driver, as sh assignments; 64, 65, 66.

load helper

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
	unset SPIRT_STORE SPIRT_MODEL
	# the source: model, opt and mstate of step 3 (catch-up moves records,
	# whatever they hold), and this peer's store with a model of its own
	spirt-init -q -s src -m m -t 3 mlp:4-3-2
	spirt-init -q -s src -m m -t 3 -S 7 -o opt.rec mlp:4-3-2
	spirt-init -q -s src -m m -t 3 -S 8 -o mst.rec mlp:4-3-2
	spirt-store -q -s src put opt/m@3 opt.rec
	spirt-store -q -s src put mstate/m@3 mst.rec
	spirt-init -q -s me -m m mlp:4-3-2
}

# same KEY: the store me holds KEY as the source does, byte for byte
same() {
	cmp <(spirt-store -s src get -f "$1") <(spirt-store -s me get -f "$1")
}

@test "catch-up: model, opt and mstate stored, the key printed; again: kept, nothing printed" {
	run --separate-stderr spirt-peer catch-up -s me -m m -t 3 p1 src
	[ "$status" -eq 0 ] || fail "$stderr"
	[ "$output" = model/m@3 ]
	same model/m@3 && same opt/m@3 && same mstate/m@3
	spirt-store -s me ls >before
	run --separate-stderr spirt-peer catch-up -s me -m m -t 3 p1 src
	[ "$status" -eq 0 ] && [ -z "$output" ] && [ -z "$stderr" ]
	spirt-store -s me ls | cmp - before
}

@test "catch-up: a model without state (no mstate) is caught up without it" {
	spirt-store -q -s src rm mstate/m@3
	run -0 spirt-peer catch-up -q -s me -m m -t 3 p1 src
	same model/m@3 && same opt/m@3
	run -66 spirt-store -s me get -f mstate/m@3
}

@test "catch-up: waits for a source that has the step late" {
	spirt-init -q -s src -m m -t 5 -o m5.rec mlp:4-3-2
	( sleep 0.4; spirt-store -q -s src put opt/m@5 opt.rec
	  spirt-store -q -s src put model/m@5 m5.rec ) &
	run --separate-stderr spirt-peer catch-up -s me -m m -t 5 \
	    --deadline 10000 p1 src
	wait
	[ "$status" -eq 0 ] || fail "$stderr"
	[ "$output" = model/m@5 ]
	same model/m@5 && same opt/m@5
}

@test "catch-up: the source dead or past the step's round by the watcher: 69, nothing stored" {
	spirt-store -s me ls >before
	# (its beats name step 6: past step 5's round of 1 step)
	spirt-beat -s me -c 1 -t 6 beat p1
	spirt-beat -s me -c 1 watch
	run --separate-stderr spirt-peer catch-up -s me -m m -t 5 p1 src
	[ "$status" -eq 69 ] || fail "$status $stderr"
	[ "$stderr" = "spirt-peer: catch-up: p1 went past step 5, or died, before this peer had model/m@5" ]
	# (rounds of 2 steps: step 6 is still step 5's round; the deadline)
	run --separate-stderr spirt-peer catch-up -s me -m m -t 5 --every 2 \
	    --deadline 200 p1 src
	[ "$status" -eq 75 ] || fail "$status $stderr"
	# (dead: silent past the watcher's budget of 10 beats of 10 ms, for
	# the 40 passes of one watcher)
	spirt-beat -s me -B 10 -c 1 -t 2 beat p1
	spirt-beat -s me -B 10 -c 40 watch 2>/dev/null
	spirt-beat -s me ls | grep -q "^p1	peer	dead	" ||
	    fail "$(spirt-beat -s me ls)"
	run -69 spirt-peer catch-up -s me -m m -t 5 p1 src
	spirt-store -s me ls | grep -v '^beat/\|^health/' |
	    cmp - <(grep -v '^beat/\|^health/' before)
}

@test "catch-up --last: the run's last model is taken from a source that ended (dead to the watcher)" {
	# (a source dead, silent past the watcher's budget, that has step 3:
	# without --last the join missed, 69; with it, the final model)
	spirt-beat -s me -B 10 -c 1 -t 3 beat p1
	spirt-beat -s me -B 10 -c 40 watch 2>/dev/null
	spirt-beat -s me ls | grep -q "^p1	peer	dead	" ||
	    fail "$(spirt-beat -s me ls)"
	run -69 spirt-peer catch-up -s me -m m -t 3 p1 src
	run -66 spirt-store -s me get model/m@3
	run -0 spirt-peer catch-up -s me -m m -t 3 --last p1 src
	assert_output model/m@3
	same model/m@3
	same opt/m@3
	same mstate/m@3
	# (a step the source never reaches: only the deadline ends the wait)
	run -75 spirt-peer catch-up -s me -m m -t 9 --last --deadline 300 p1 src
}

@test "catch-up: the model without its optimiser state: the join missed, 69" {
	spirt-store -q -s src rm opt/m@3
	spirt-store -s me ls >before
	run -69 spirt-peer catch-up -s me -m m -t 3 p1 src
	spirt-store -s me ls | cmp - before
}

@test "catch-up: a source that makes no step for --deadline: 75, nothing stored" {
	spirt-store -s me ls >before
	run --separate-stderr spirt-peer catch-up -s me -m m -t 9 \
	    --deadline 300 p1 src
	[ "$status" -eq 75 ] || fail "$status $stderr"
	[ "$stderr" = "spirt-peer: catch-up: p1 did not go on in 300 ms (--deadline)" ]
	spirt-store -s me ls | cmp - before
	# (a path that is no store yet is asked again until then)
	run -75 spirt-peer catch-up -s me -m m -t 3 --deadline 300 p1 nostore
}

@test "catch-up: a store that cannot take them: 74, nothing stored" {
	spirt-init -q -s src -m big -t 2 mlp:784-512-10
	spirt-store -s src get -f model/big@2 >big.rec
	spirt-store -q -s src put opt/big@2 big.rec
	SPIRT_MAPSIZE=1M SPIRT_MAPSIZE_MAX=1M spirt-init -q -s small -m x \
	    mlp:4-3-2
	spirt-store -s small ls >before
	run --separate-stderr env SPIRT_MAPSIZE=1M SPIRT_MAPSIZE_MAX=1M \
	    spirt-peer catch-up -s small -m big -t 2 p1 src
	[ "$status" -eq 74 ] || fail "$status $stderr"
	[[ "$stderr" == "spirt-peer: catch-up: small: could not store model/big@2: "* ]]
	spirt-store -s small ls | cmp - before
}

@test "catch-up -P: the other peer with the newest model (the first of those as far), or nothing" {
	spirt-init -q -s p2 -m m -t 7 mlp:4-3-2
	spirt-init -q -s p2 -m m -t 12 mlp:4-3-2
	spirt-init -q -s p3 -m m -t 12 mlp:4-3-2
	spirt-init -q -s p3 -m other -t 40 mlp:4-3-2
	printf '# the peers\np1 %s\n\n  p2 %s\np3 %s\n' "$PWD/me" "$PWD/p2" \
	    "$PWD/p3" >peers
	run -0 spirt-peer catch-up -m m -P peers --peer 0
	assert_output "12 p2 $PWD/p2"
	# (this peer's own line is not asked: p2 has the newest of the others)
	spirt-init -q -s me -m m -t 50 mlp:4-3-2
	run -0 spirt-peer catch-up -m m -P peers --peer 1
	assert_output "50 p1 $PWD/me"
	run -0 spirt-peer catch-up -m other -P peers --peer 0
	assert_output "40 p3 $PWD/p3"
	run -0 spirt-peer catch-up -m none -P peers --peer 0
	assert_output ''
	# none answers (no store there): nothing, at once or after --wait
	printf 'p1 %s\np2 %s/gone\n' "$PWD/me" "$PWD" >peers2
	run -0 spirt-peer catch-up -m m -P peers2 --peer 0
	assert_output ''
	s0=$(date +%s%N)
	run -0 spirt-peer catch-up -m m -P peers2 --peer 0 --wait \
	    --deadline 1500
	assert_output ''
	[ $(( ($(date +%s%N) - s0) / 1000000 )) -ge 1500 ]
	# one that comes while it waits
	( sleep 0.5; spirt-init -q -s gone -m m -t 3 mlp:4-3-2 ) &
	run -0 spirt-peer catch-up -m m -P peers2 --peer 0 --wait \
	    --deadline 20000
	wait
	assert_output "3 p2 $PWD/gone"
	# --pace MS: that peer's step MS later, and the ms it took; the
	# step it had when it no longer answers
	( sleep 0.3; spirt-init -q -s gone -m m -t 5 mlp:4-3-2 ) &
	run -0 spirt-peer catch-up -m m -P peers2 --peer 0 --pace 800
	wait
	[[ "$output" =~ ^"3 p2 $PWD/gone 5 "([0-9]+)$ ]]
	[ "${BASH_REMATCH[1]}" -ge 800 ]
	( sleep 0.3; rm -rf gone ) &
	run -0 spirt-peer catch-up -m m -P peers2 --peer 0 --pace 800
	wait
	[[ "$output" =~ ^"5 p2 $PWD/gone 5 "[0-9]+$ ]]
	run -0 spirt-peer catch-up -m m -P peers2 --peer 0 --pace 100
	assert_output ''
	printf 'p1\n' >bad
	run -65 spirt-peer catch-up -m m -P bad --peer 1
	printf 'p1 x\nbad!id y\n' >bad
	run -65 spirt-peer catch-up -m m -P bad --peer 0
	run -66 spirt-peer catch-up -m m -P nofile --peer 0
}

@test "catch-up -P --join: the step to join at, past --after, on an epoch's (and a round's) first step; their own step when they are still and the round before combined this peer" {
	spirt-init -q -s p2 -m m -t 12 mlp:4-3-2
	printf 'p1 %s\np2 %s\n' "$PWD/me" "$PWD/p2" >peers
	# 12 + 5 up to the epoch's first step; past --after; with --every
	# 4, a step that is both an epoch's and a round's first (lcm 20)
	run -0 spirt-peer catch-up -m m -P peers --peer 0 --join 5 --epoch 10
	[[ "$output" =~ ^"20 12 p2 $PWD/p2 5 12,"[0-9]+$ ]]
	run -0 spirt-peer catch-up -m m -P peers --peer 0 --join 5 \
	    --epoch 10 --after 25
	[[ "$output" =~ ^"30 12 p2 $PWD/p2 5 12,"[0-9]+$ ]]
	run -0 spirt-peer catch-up -m m -P peers --peer 0 --join 3 \
	    --epoch 6 --every 4
	[[ "$output" =~ ^"24 12 p2 $PWD/p2 3 12,"[0-9]+$ ]]
	# the same step as --seen said, 2 s or more ago: still, --after
	# passed over; seen just now: not still; a new step: seen anew
	run -0 spirt-peer catch-up -m m -P peers --peer 0 --join 5 \
	    --epoch 10 --after 25 --seen 12,0
	assert_output "20 12 p2 $PWD/p2 5 12,0"
	ms=$(spirt-peer catch-up -m m -P peers --peer 0 --join 5 --epoch 10)
	ms=${ms##*,}
	run -0 spirt-peer catch-up -m m -P peers --peer 0 --join 5 \
	    --epoch 10 --after 25 --seen "12,$ms"
	assert_output "30 12 p2 $PWD/p2 5 12,$ms"
	run -0 spirt-peer catch-up -m m -P peers --peer 0 --join 5 \
	    --epoch 10 --seen 11,0
	[[ "$output" =~ ^"20 12 p2 $PWD/p2 5 12,"[0-9]+$ ]]
	[ "${output##*,}" -ge "$ms" ]
	# the round before their step combined this peer (p1 used): its
	# own step, mid-epoch; not with --every, nor for another peer
	"$PYTHON" -c 'import numpy as np; np.save("r.npy", np.frombuffer(
	    b"VERSION=1\npeer=p1 used\npeer=p2 self\nEND\n", dtype=np.uint8))'
	spirt-store -q -s p2 import gagg/11/round r.npy
	run -0 spirt-peer catch-up -m m -P peers --peer 0 --join 5 \
	    --epoch 10 --after 25 --seen 12,0
	assert_output "12 12 p2 $PWD/p2 5 12,0"
	run -0 spirt-peer catch-up -m m -P peers --peer 0 --join 5 \
	    --epoch 10 --every 4 --seen 12,0
	assert_output "20 12 p2 $PWD/p2 5 12,0"
	printf 'p3 %s\np2 %s\n' "$PWD/me" "$PWD/p2" >peers3
	run -0 spirt-peer catch-up -m m -P peers3 --peer 0 --join 5 \
	    --epoch 10 --seen 12,0
	assert_output "20 12 p2 $PWD/p2 5 12,0"
	# --join 0: the margin from the pace: still (no step in the pause),
	# 2 and their step; moving, 2 steps in about 300 ms: 2 x 1100 / 300
	# + 2, 8 or 9, from their later step
	run -0 spirt-peer catch-up -m m -P peers --peer 0 --join 0 \
	    --pace 300 --epoch 10
	[[ "$output" =~ ^"12 12 p2 $PWD/p2 2 12,"[0-9]+$ ]]
	( sleep 0.1; spirt-init -q -s p2 -m m -t 14 mlp:4-3-2 ) &
	run -0 spirt-peer catch-up -m m -P peers --peer 0 --join 0 \
	    --pace 300 --epoch 10
	wait
	[[ "$output" =~ ^"30 14 p2 $PWD/p2 "([0-9]+)" 14,"[0-9]+$ ]]
	[ "${BASH_REMATCH[1]}" -ge 3 ] && [ "${BASH_REMATCH[1]}" -le 9 ]
	# no other peer with a model: nothing
	run -0 spirt-peer catch-up -m none -P peers --peer 0 --join 5 \
	    --epoch 10
	assert_output ''
	run -64 --separate-stderr spirt-peer catch-up -m m -P peers --peer 2 \
	    --join 5 --epoch 10
	assert_equal "$stderr" "spirt-peer: --peer 2: peers has 2 peers (0 to 1)"
	# a step past what the sums take, named by a peer's store: 65
	spirt-init -q -s big -m m -t 4611686018427387905 mlp:4-3-2
	printf 'p1 %s\np2 %s\n' "$PWD/me" "$PWD/big" >peersbig
	run -65 --separate-stderr spirt-peer catch-up -m m -P peersbig \
	    --peer 0 --join 5 --epoch 10
	assert_equal "$stderr" "spirt-peer: catch-up: p2: model step 4611686018427387905 is out of range"
	run -0 spirt-peer catch-up -m m -P peersbig --peer 0
	assert_output "4611686018427387905 p2 $PWD/big"
}

@test "catch-up: usage: no step, no model, a bad id, one operand: 64" {
	run -64 spirt-peer catch-up -s me -m m p1 src
	run -64 spirt-peer catch-up -s me -t 3 p1 src
	run -64 spirt-peer catch-up -s me -m m -t 3 'p 1' src
	run -64 spirt-peer catch-up -s me -m m -t 3 p1
	run -64 spirt-peer catch-up -s me -m m -t 3 --deadline 0 p1 src
	# (-P goes with --peer, and neither -t nor operands; --wait with -P)
	run -64 spirt-peer catch-up -m m -P peers
	run -64 spirt-peer catch-up -m m -P peers --peer 0 -t 3
	run -64 spirt-peer catch-up -m m -P peers --peer 0 p1 src
	run -64 spirt-peer catch-up -m m --peer 0 -t 3 p1 src
	run -64 spirt-peer catch-up -m m --wait -t 3 p1 src
	run -64 spirt-peer catch-up -m m --pace 100 -t 3 p1 src
	run -64 spirt-peer catch-up -m m -P peers --peer 0 --pace 0
	run -64 spirt-peer catch-up -m m -P peers --peer 0 --last
	# (--join needs --epoch, and --pace for a margin of 0; --epoch,
	# --after, --seen go with it, and with -P so does --every)
	run -64 spirt-peer catch-up -m m -P peers --peer 0 --join 5
	run -64 spirt-peer catch-up -m m -P peers --peer 0 --join 0 --epoch 9
	run -64 spirt-peer catch-up -m m -P peers --peer 0 --join x --epoch 9
	run -64 spirt-peer catch-up -m m -P peers --peer 0 --epoch 9
	run -64 spirt-peer catch-up -m m -P peers --peer 0 --after 3
	run -64 spirt-peer catch-up -m m -P peers --peer 0 --seen 3,4
	run -64 spirt-peer catch-up -m m -P peers --peer 0 --every 4
	run -64 spirt-peer catch-up -m m -P peers --peer 0 --join 5 \
	    --epoch 9 --seen 3
	run -64 spirt-peer catch-up -m m -P peers --peer 0 --join 5 \
	    --epoch 9 --after -2
	run -64 spirt-peer catch-up -s me -m m -t 3 --join 5 --epoch 9 p1 src
}

@test "peers: line I of the peers file and the others, as sh assignments; spirt-train relays its refusals" {
	printf '# the peers\np0 http://127.0.0.1:1/\n\n  p1 %s\np2 %s\n' \
	    "$PWD/me" "$PWD/it's" >peers
	run -0 --separate-stderr spirt-peer peers -P peers --peer 1
	[ -z "$stderr" ]
	assert_output "np=3
self='p1'
selfurl='$PWD/me'
others='http://127.0.0.1:1/ $PWD/it'\\''s'
urls='http://127.0.0.1:1/'
oids='p0:0 p2:2'"
	# (what sh reads of it, a quote in a path too)
	eval "$output"
	[ "$np" = 3 ] && [ "$self" = p1 ] && [ "$oids" = "p0:0 p2:2" ]
	[ "$others" = "http://127.0.0.1:1/ $PWD/it's" ]
	run -0 spirt-peer peers -P peers --peer 0
	assert_line "selfurl='http://127.0.0.1:1/'"
	assert_line "urls=''"
	# 64: no --peer, no -P, an operand, a line past the last
	run -64 spirt-peer peers -P peers
	run -64 spirt-peer peers --peer 0
	run -64 spirt-peer peers -P peers --peer 0 extra
	run -64 --separate-stderr spirt-peer peers -P peers --peer 3
	[ "$stderr" = "spirt-peer: --peer 3: peers has 3 peers (0 to 2)" ]
	# 65: a line without a location, a bad id, no peer at all
	printf 'p0 x\np1\n' >bad
	run -65 --separate-stderr spirt-peer peers -P bad --peer 0
	[ "$stderr" = 'spirt-peer: --peers bad: line 2: "p1": expected "id location"' ]
	printf 'p0 x\nbad!id y\n' >bad
	run -65 spirt-peer peers -P bad --peer 0
	printf '# none\n\n' >none
	run -65 --separate-stderr spirt-peer peers -P none --peer 0
	[ "$stderr" = "spirt-peer: --peers none: no peer in it" ]
	# 66: no file
	run -66 --separate-stderr spirt-peer peers -P nofile --peer 0
	[[ "$stderr" == "spirt-peer: --peers nofile: cannot read it: "* ]]
	# spirt-train says the same, with the same code, and makes nothing
	run -66 --separate-stderr spirt-train -q -s t.db --peers nofile
	[[ "$stderr" == "spirt-train: --peers nofile: cannot read it: "* ]]
	run -65 --separate-stderr spirt-train -q -s t.db --peers none
	[ "$stderr" = "spirt-train: --peers none: no peer in it" ]
	run -64 --separate-stderr spirt-train -q -s t.db --peers peers \
	    --peer 3
	[ "$stderr" = "spirt-train: --peer 3: peers has 3 peers (0 to 2)" ]
	[ ! -e t.db ]
}
