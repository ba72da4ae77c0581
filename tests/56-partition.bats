#!/usr/bin/env bats
# 56-partition: three peers in three network namespaces train with
# heartbeats (spirt-train --beat) over HTTP; the link of one is taken
# down: that minority stops with 75 and says why, the majority goes on;
# the link comes back and the same command rejoins the third, which
# catches up: one model on all three at the end.  Root only; bounded; the
# namespaces and everything in them go in teardown (tests/netns.bash).

load helper
load netns

# (the small data set: epochs of 10 steps.  The majority runs at full
# pace while p3 stops, which takes its round's three tries, each waiting
# for a minority alive as long as the beats say: about 10 s, 500 steps
# here at 20 ms a step; enough are left for p3 to come back and rejoin;
# under the sanitizers, at about 70 ms a step, 400 do)
STEPS=1200
case ${SPIRT_CHECK_CFLAGS:-} in
*sanitize*) STEPS=400 ;;
esac
PORT=7070

teardown() {
	netns_teardown
	return 0
}

# workers STORE: the workers that hold samples in STORE's assignment
workers() {
	spirt-shard -s "$1" --stats |
	    awk '$1 == "assign" && $2 == "worker" { print $3 }' |
	    sort -u | tr '\n' ' '
}

as_peer() {
	printf 'SPIRT_KEY=%s SPIRT_TOKEN=%s SPIRT_GROUP=%s' "$PWD/p$1.key" \
	    "$PWD/p$1.tok" "$PWD/group.pub"
}



# train I: peer I's driver in host I, a beat every 200 ms (dead after 2 s)
train() {
	netns_exec "$1" env $(as_peer "$1") timeout 600 spirt-train \
	    -s "$PWD/s$1" -n 2 -b 20 -e $((STEPS / 10)) \
	    --peers "$PWD/peers" --peer $(($1 - 1)) \
	    --steps $STEPS --eval-every $STEPS --deadline 60000 --beat 200
}

@test "partition: the minority stops with 75 and says why, the majority goes on; healed, the same command rejoins; one model" {
	netns_require
	smalldata "$PWD/data"
	netns_setup 3
	netns_peers 3 "$PORT"
	spirt-shard -s base -q -n 6 --seed 1 \
	    data/train-images-idx3-ubyte.gz data/train-labels-idx1-ubyte.gz
	spirt-shard -s base -q -d test data/t10k-images-idx3-ubyte.gz \
	    data/t10k-labels-idx1-ubyte.gz
	for i in 1 2 3; do
		cp -r base s$i
	done
	for i in 1 2 3; do
		train $i >o$i 2>e$i &
		eval "pid$i=\$!"
	done
	until_ 1200 model_at s3 10
	# host 3's link goes down (the hub's end of its veth pair, or the
	# wire's port: tests/netns.bash)
	netns_cut 3
	# p3 alone is no majority of {p1, p2, p3}: it stops and says why
	rc=0
	wait $pid3 || rc=$?
	[ "$rc" -eq 75 ] || { cat e3 >&2; false; }
	# (cut between rounds: a minority of the last round's members alive;
	# cut inside one: no combination held by more than half decided)
	grep -q 'a minority\|no combination is held by more than half' e3 ||
	    { cat e3 >&2; false; }
	grep -q 'rerun to resume\|run it again once' e3
	cut3=$(spirt-store -s s3 ls model/mlp@ | cut -f1 | sed 's/.*@//' |
	    sort -n | tail -n 1)
	# the majority goes on without it, well past where p3 stopped
	until_ 1800 model_at s1 $((cut3 + 20)) || { tail -n 30 e1 e2 >&2; false; }
	kill -0 $pid1
	kill -0 $pid2
	# the link heals; the same command brings p3 back
	netns_heal 3
	train 3 >o3b 2>e3b &
	pid3=$!
	wait $pid1 || { cat e1 >&2; false; }
	wait $pid2 || { cat e2 >&2; false; }
	wait $pid3 || { cat e3b >&2; false; }
	grep -q 'caught up from http://' e3b
	# it rejoins at an epoch's first step; or, when p3's stop took the
	# majority's whole run (an undecided round waits up to --deadline,
	# three times, on a loaded machine), it fetches their last model, as
	# a peer that comes back after the end does (56-failures has the
	# rejoins for themselves)
	grep -q 'rejoined at step [0-9]*0:\|the run ended before this peer could join' e3b ||
	    { cat e3b >&2; false; }
	h=$(spirt-store -s s1 get model/mlp@$STEPS | md5sum)
	[ "$(spirt-store -s s2 get model/mlp@$STEPS | md5sum)" = "$h" ]
	[ "$(spirt-store -s s3 get model/mlp@$STEPS | md5sum)" = "$h" ]
	# the majority spread p3's workers' samples over its functions, at
	# the same step on both, until p3 rejoined at an epoch's first step
	# and got them back; the minority kept its data as it was
	grep 'peers p3 out of the round' e1 | sed 's/(revision .*//' >out1
	grep 'peers p3 out of the round' e2 | sed 's/(revision .*//' >out2
	[ -s out1 ] && diff out1 out2
	grep -q 'of peers out of the last epoch get their samples back' e1
	# (each store's workers with samples now: p3's back on the majority
	# once it rejoined; else still spread over theirs)
	if grep -q 'rejoined at step' e3b; then
		[ "$(workers s1)" = '0 1 2 3 4 5 ' ]
	else
		[ "$(workers s1)" = '0 1 2 3 ' ]
	fi
	[ "$(workers s3)" = '0 1 2 3 4 5 ' ]
}
