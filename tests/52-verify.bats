#!/usr/bin/env bats
# 52-verify: spirt-peer verify walks a store's signed digests from step 0
# on: a 3-peer run's chain holds (under the group key, and under an
# allowlist); a tampered digest, a swapped model, a missing step, a
# stranger's key each give 65 naming the step and what broke; no store or
# no digests 66; usage 64.  Nothing it reads is changed.

load helper

STEPS=6

# the run, once: 3 peers (stores by path, tokens of one group), 1
# function x batch 32, STEPS steps, digests kept
setup_file() {
	[ -r "$FMNIST/train-images-idx3-ubyte.gz" ] || return 0
	local d=$BATS_FILE_TMPDIR/run i pids=
	mkdir -p "$d" && cd "$d" || return 1
	spirt-key keygen -p group.pub group.key >/dev/null
	: >peers
	printf 'VERSION=1\nTYPE=spirt-allowlist\n' >allow
	for i in 1 2 3; do
		spirt-key keygen p$i.key >p$i.hex
		spirt-key invite -o p$i.tok -g group.key -i p$i -r r1 \
		    "$(cat p$i.hex)"
		echo "p$i $d/s$i" >>peers
		echo "MEMBER=$(cat p$i.hex) peer p$i" >>allow
	done
	echo END >>allow
	spirt-shard -s base -q -n 3 --seed 1 \
	    "$FMNIST/train-images-idx3-ubyte.gz" \
	    "$FMNIST/train-labels-idx1-ubyte.gz"
	for i in 1 2 3; do
		cp -r base s$i
	done
	for i in 1 2 3; do
		SPIRT_KEY=$d/p$i.key SPIRT_TOKEN=$d/p$i.tok \
		    SPIRT_GROUP=$d/group.pub timeout 300 spirt-train -q \
		    -s "$d/s$i" -n 1 -b 32 --peers "$d/peers" \
		    --peer $((i - 1)) --steps $STEPS --eval-every 1000 \
		    --keep-digests >"$d/o$i" 2>"$d/e$i" &
		pids="$pids $!"
	done
	# shellcheck disable=SC2086
	wait $pids || { cat "$d"/e* >&2; return 1; }
}

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
	export TMPDIR="$BATS_TEST_TMPDIR"
	unset SPIRT_STORE SPIRT_GROUP SPIRT_ALLOW SPIRT_RUN SPIRT_MODEL
	[ -r "$FMNIST/train-images-idx3-ubyte.gz" ] ||
		skip "no Fashion-MNIST (Debian package dataset-fashion-mnist)"
	cp -r "$BATS_FILE_TMPDIR/run/s1" "$BATS_FILE_TMPDIR/run/group.pub" \
	    "$BATS_FILE_TMPDIR/run/allow" .
}

# redigest STORE KEY: the digest at KEY with one byte of its signature
# flipped, put back as a sound record (the record's checksums hold)
redigest() {
	spirt-store -s "$1" get -f "$2" >dg.rec
	"$PYTHON" -c "$PYREC
r = load('dg.rec')
a = r['a'].copy()
a[-1] ^= 1
out(st.encode(a, step=r['step']))" >bad.rec
	spirt-store -s "$1" put "$2" bad.rec
}

@test "verify: a 3-peer run's chain holds, under the group key and under an allowlist; one line a step, who made it" {
	before=$(store_digest s1)
	run -0 --separate-stderr spirt-peer verify -s s1 -m mlp -g group.pub
	assert_equal "$stderr" ""
	[ "${#lines[@]}" -eq $((STEPS + 1)) ]
	for t in $(seq 0 $((STEPS - 1))); do
		[[ "${lines[$t]}" =~ ^"step $t: holds: model "[0-9a-f]{64}" ("(kept|not kept)"): p1 p2 p3"$ ]] ||
			fail "line $t: ${lines[$t]}"
	done
	assert_equal "${lines[$STEPS]}" \
	    "steps 0..$((STEPS - 1)) of run r1: the chain holds, $STEPS steps: p1 p2 p3"
	# the last step's model is kept: its hash is the one the digests
	# name, computed here by tests/vhash.py (docs/protocol.md)
	spirt-store -s s1 get -f model/mlp@$((STEPS - 1)) >last.rec
	want=$("$PYTHON" "$BATS_TEST_DIRNAME/vhash.py" last.rec)
	assert_equal "${lines[$((STEPS - 1))]}" \
	    "step $((STEPS - 1)): holds: model $want (kept): p1 p2 p3"
	# the allowlist, the run named, the environment: the same
	run -0 spirt-peer verify -s s1 -m mlp -a allow -r r1
	assert_line --index $STEPS \
	    "steps 0..$((STEPS - 1)) of run r1: the chain holds, $STEPS steps: p1 p2 p3"
	SPIRT_STORE=s1 SPIRT_MODEL=mlp SPIRT_GROUP=$PWD/group.pub \
	    run -0 spirt-peer verify
	[ "$(store_digest s1)" = "$before" ]
}

@test "verify: a tampered digest is 65, naming the step, the peer's digest and the signature" {
	redigest s1 digest/3/p2
	before=$(store_digest s1)
	run -65 --separate-stderr spirt-peer verify -s s1 -m mlp -g group.pub
	assert_equal "$stderr" "spirt-peer: verify: step 3: digest/3/p2: authentication failed (bad MAC) (EMAC)"
	assert_line --index 3 --partial "step 3: broken: digest/3/p2: "
	assert_line --index 2 --regexp '^step 2: holds: '
	assert_line --index 4 --regexp '^step 4: holds: '
	assert_line --index $STEPS "steps 0..$((STEPS - 1)) of run r1: broken at 1 of $STEPS steps"
	[ "$(store_digest s1)" = "$before" ]
}

@test "verify: a swapped model is 65: the stored model@t hashes otherwise than the digests say" {
	spirt-store -s s1 get -f model/mlp@$STEPS >next.rec
	spirt-store -s s1 put model/mlp@$((STEPS - 1)) next.rec
	run -65 --separate-stderr spirt-peer verify -s s1 -m mlp -g group.pub
	[[ "$stderr" =~ ^"spirt-peer: verify: step $((STEPS - 1)): model/mlp@$((STEPS - 1)) hashes "[0-9a-f]{12}", the digests name mlp@$((STEPS - 1)) = "[0-9a-f]{12}$ ]] ||
		fail "$stderr"
	assert_line --index $STEPS "steps 0..$((STEPS - 1)) of run r1: broken at 1 of $STEPS steps"
}

@test "verify: a missing step is 65: no digest of it" {
	spirt-store -s s1 rm digest/2/p1 digest/2/p2 digest/2/p3
	run -65 --separate-stderr spirt-peer verify -s s1 -m mlp -g group.pub
	assert_equal "$stderr" "spirt-peer: verify: step 2: no digest (digest/2/ is empty)"
	assert_line --index 2 "step 2: broken: no digest (digest/2/ is empty)"
	assert_line --index 3 --regexp '^step 3: holds: '
	# steps without digests in a row (a run pruned without
	# --keep-digests): one line for them all
	spirt-store -s s1 rm digest/0/p1 digest/0/p2 digest/0/p3 \
	    digest/1/p1 digest/1/p2 digest/1/p3
	run -65 --separate-stderr spirt-peer verify -s s1 -m mlp -g group.pub
	assert_equal "$stderr" "spirt-peer: verify: steps 0..2: no digest (digest/0/ to digest/2/ are empty)"
	assert_line --index 0 "steps 0..2: broken: no digest (digest/0/ to digest/2/ are empty)"
	assert_line --index 1 --regexp '^step 3: holds: '
	assert_line --index $((STEPS - 2)) "steps 0..$((STEPS - 1)) of run r1: broken at 3 of $STEPS steps"
	# one peer's digest missing is not a break: the others list it
	cp -r "$BATS_FILE_TMPDIR/run/s1" s1b
	spirt-store -s s1b rm digest/2/p3
	run -0 spirt-peer verify -s s1b -m mlp -g group.pub
	assert_line --index 2 --regexp '^step 2: holds: model [0-9a-f]{64} \(not kept\): p1 p2 p3 \(no digest\)$'
}

@test "verify: digests under a key the group or the allowlist does not know are 65, naming the peer" {
	spirt-key keygen -p other.pub other.key >/dev/null
	run -65 --separate-stderr spirt-peer verify -s s1 -m mlp -g other.pub
	assert_equal "$stderr" "spirt-peer: verify: step 0: digest/0/p1: unknown key (not a member) (EUNKNOWNKEY)"
	printf 'VERSION=1\nTYPE=spirt-allowlist\n%s\nEND\n' \
	    "$(grep ' p1$' allow)" >allow1
	run -65 --separate-stderr spirt-peer verify -s s1 -m mlp -a allow1
	[[ "$stderr" == "spirt-peer: verify: step 0: digest/0/p2: "* ]] ||
		fail "$stderr"
	# another run: its digests are not this run's
	run -65 --separate-stderr spirt-peer verify -s s1 -m mlp -g group.pub -r r2
	[[ "$stderr" == "spirt-peer: verify: step 0: digest/0/p1: "*"(ERUN)" ]] ||
		fail "$stderr"
}

@test "verify: no store, no model, no digests: 66; usage: 64" {
	run -66 --separate-stderr spirt-peer verify -s nosuch -m mlp -g group.pub
	[[ "$stderr" == "spirt-peer: nosuch: "* ]] || fail "$stderr"
	spirt-store -s s1 get -f model/mlp@$STEPS >m.rec
	spirt-store -s empty put model/mlp@$STEPS m.rec
	run -66 --separate-stderr spirt-peer verify -s empty -m mlp -g group.pub
	assert_equal "$stderr" "spirt-peer: verify: empty: no digest (digest/<t>/<peer>; spirt-train --keep-digests keeps them)"
	run -66 --separate-stderr spirt-peer verify -s s1 -m mlp -g nosuch.pub
	[[ "$stderr" == "spirt-peer: verify: nosuch.pub: "* ]] || fail "$stderr"
	# a model the store does not have: not a chain of steps "not kept"
	run -66 --separate-stderr spirt-peer verify -s s1 -m cnn -g group.pub
	assert_equal "$stderr" "spirt-peer: verify: s1: no model/cnn@<t> (-m)"
	run -64 --separate-stderr spirt-peer verify -s s1 -g group.pub
	[[ "$stderr" == "spirt-peer: no model (-m or SPIRT_MODEL)"$'\n'"usage: "* ]] ||
		fail "$stderr"
	run -64 --separate-stderr spirt-peer verify -s s1 -m mlp
	[[ "$stderr" == "spirt-peer: no group key and no allowlist"* ]] ||
		fail "$stderr"
	run -64 spirt-peer verify -s s1 -m mlp -g group.pub extra
	run -64 spirt-peer verify -s s1 -m mlp -g group.pub -r 'not an id'
}
