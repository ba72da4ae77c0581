#!/usr/bin/env bats
# 55-xwarm: the warm exchange (spirt-peer exchange -i): one process per
# peer for the run, one round per step line (the warm protocol of
# docs/contracts.md), each peer's session kept, pulls that wait for what
# is not there yet; and spirt-train's bound on its server's start

load helper

teardown() {
	local p
	for p in $SRVS $XCHS; do
		kill -TERM "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	return 0
}

# stores s1..s3: model/m@0..2 the same on each, agg/0..2 each its own
# (a<i>_<t>.npy), keys p1..p3; peers names the stores by path
stores3() {
	"$PYTHON" -c "$PYREC
rng = np.random.default_rng(5)
for t in (0, 1, 2):
    open('m%d.rec' % t, 'wb').write(st.encode(rng.standard_normal(500).astype(np.float32), name='m:500', step=t))
    for i in (1, 2, 3):
        a = rng.standard_normal(500).astype(np.float32)
        np.save('a%d_%d.npy' % (i, t), a)
        open('a%d_%d.rec' % (i, t), 'wb').write(st.encode(a, name='m:500', step=t, samples=32))
"
	for i in 1 2 3; do
		for t in 0 1 2; do
			spirt-store -s s$i put model/m@$t m$t.rec
			spirt-store -s s$i put agg/$t a${i}_$t.rec
		done
	done
	pathpeers 1 3
}

# gagg_is STORE T: gagg/T of STORE is the mean of the three agg/T
gagg_is() {
	spirt-store -s "$1" get "gagg/$2" >g.rec
	"$PYTHON" -c "$PYREC
want = sum(np.load('a%d_$2.npy' % i).astype(np.float64) for i in (1, 2, 3)) / 3
d = np.abs(load('g.rec')['a'] - want).max()
assert d <= 1e-6, 'maxdiff %g' % d
"
}

# warm I INPUT ARGS...: peer I's warm exchange reading INPUT, in the
# background; out<I>, err<I>; its pid in xpid<I> and XCHS
warm() {
	local i=$1 in=$2
	shift 2
	SPIRT_KEY=p$i.key SPIRT_ID=p$i SPIRT_RUN=r1 SPIRT_GROUP= \
	    SPIRT_TOKEN= SPIRT_ALLOW= timeout 120 spirt-peer exchange -i -m m \
	    -s s$i --deadline 20000 "$@" <"$in" >out$i 2>err$i &
	eval "xpid$i=\$!"
	XCHS="$XCHS $!"
}

@test "warm exchange: one round per step line, one answer line each, a bad line refused and nothing run" {
	stores3
	printf '0\n1\nx1\n0\n' >lines
	for i in 1 2 3; do
		warm $i lines -P peers
	done
	# (at the end of input: the worst code answered, 64 for the bad line)
	for i in 1 2 3; do
		s=0
		eval "wait \$xpid$i" || s=$?
		[ "$s" -eq 64 ] || { cat err$i; false; }
	done
	for i in 1 2 3; do
		run -0 cat out$i
		[ "${#lines[@]}" -eq 4 ]
		[[ "${lines[0]}" =~ ^step=0\ used=3\ peers=3\ ms=[0-9.]+$ ]]
		[[ "${lines[1]}" =~ ^step=1\ used=3\ peers=3\ ms=[0-9.]+$ ]]
		[ "${lines[2]}" = "error=64" ]
		[ "${lines[3]}" = "step=0 exchanged=already" ]
		grep -q 'spirt-peer: stdin:3: "x1": ' err$i
	done
	for t in 0 1; do
		h=$(spirt-store -s s1 get gagg/$t | md5sum)
		[ "$(spirt-store -s s2 get gagg/$t | md5sum)" = "$h" ]
		[ "$(spirt-store -s s3 get gagg/$t | md5sum)" = "$h" ]
		gagg_is s2 $t
	done
	# what the bad line did not run: no round of step 2
	run -66 spirt-store -s s1 get gagg/2
	# -i takes no -t; -t or -i is needed
	SPIRT_KEY=p1.key SPIRT_ID=p1 SPIRT_RUN=r1 run -64 spirt-peer exchange \
	    -i -t 0 -m m -s s1 -P peers </dev/null
	SPIRT_KEY=p1.key SPIRT_ID=p1 SPIRT_RUN=r1 run -64 spirt-peer exchange \
	    -m m -s s1 -P peers </dev/null
}

@test "warm exchange: a peer that never comes is left out of each round, and the rounds go on" {
	stores3
	printf '0\n1\n' >lines
	warm 1 lines -P peers --deadline 600
	warm 2 lines -P peers --deadline 600
	wait $xpid1 && wait $xpid2
	for i in 1 2; do
		[[ "$(sed -n 1p out$i)" =~ ^step=0\ used=2\ peers=3 ]]
		[[ "$(sed -n 2p out$i)" =~ ^step=1\ used=2\ peers=3 ]]
		[ "$(grep -c 'peer p3 left out: late' err$i)" -eq 2 ]
	done
	[ "$(spirt-store -s s1 get gagg/1 | md5sum)" = \
	    "$(spirt-store -s s2 get gagg/1 | md5sum)" ]
}

# ---- over HTTP ----

# the stores of stores3, a group key and a token each, each peer serving
# its store (-v: its log names each session and each wait); hpeers names
# them by URL
hpeers3() {
	stores3
	spirt-peer keygen -p group.pub group.key >/dev/null
	: >hpeers
	for i in 1 2 3; do
		spirt-peer invite -o p$i.tok -g group.key -i p$i -r r1 \
		    "$(cat p$i.hex)"
		mkfifo ready$i
		timeout 120 spirt-peer serve -v -s s$i -k p$i.key -T p$i.tok \
		    -g group.pub -l 127.0.0.1:0 -F 3 3>ready$i 2>srv$i.log &
		SRVS="$SRVS $!"
		read -r -t 30 addr <ready$i || { cat srv$i.log >&2; return 1; }
		echo "p$i http://$addr" >>hpeers
	done
}

# hwarm I INPUT ARGS...: as warm, over HTTP with the token
hwarm() {
	local i=$1 in=$2
	shift 2
	SPIRT_KEY=p$i.key SPIRT_TOKEN=p$i.tok SPIRT_GROUP=group.pub \
	    timeout 120 spirt-peer exchange -i -m m -s s$i --deadline 20000 \
	    "$@" <"$in" >out$i 2>err$i &
	eval "xpid$i=\$!"
	XCHS="$XCHS $!"
}

# hstop: the servers stopped, their logs complete
hstop() {
	local p
	for p in $SRVS; do
		kill -TERM "$p"
		wait "$p"
	done
	SRVS=
}

@test "warm exchange over HTTP: three rounds, one handshake per pair of peers for all of them" {
	hpeers3
	printf '0\n1\n2\n' >lines
	for i in 1 2 3; do
		hwarm $i lines -P hpeers
	done
	wait $xpid1 && wait $xpid2 && wait $xpid3
	for i in 1 2 3; do
		[ "$(grep -c '^step=[012] used=3 peers=3 ' out$i)" -eq 3 ] ||
			{ cat out$i err$i; false; }
	done
	for t in 0 1 2; do
		h=$(spirt-store -s s1 get gagg/$t | md5sum)
		[ "$(spirt-store -s s2 get gagg/$t | md5sum)" = "$h" ]
		[ "$(spirt-store -s s3 get gagg/$t | md5sum)" = "$h" ]
	done
	gagg_is s3 2
	hstop
	# each server: one session for each of the two other peers, for the
	# three rounds' six pulls of each (an aggregate and a digest a round)
	for i in 1 2 3; do
		[ "$(grep -c '): session$' srv$i.log)" -eq 2 ] ||
			{ grep session srv$i.log; false; }
		grep -q '^spirt-peer: stopped: [1-9][0-9]* served, 0 refused$' \
		    srv$i.log
	done
}

@test "warm exchange over HTTP: a pull waits on the server for an aggregate not yet published" {
	hpeers3
	grep -v '^p3 ' hpeers >hpeers2
	echo 0 >line1
	mkfifo line2
	hwarm 1 line1 -P hpeers2
	hwarm 2 line2 -P hpeers2
	# p2 has not started its round: p1's pull of xagg/0/p2 waits at p2's
	# server, which says so; only then does p2 publish
	exec 8>line2
	for k in $(seq 1 300); do
		grep -q 'p1: get xagg/0/p2: waiting (up to ' srv2.log && break
		sleep 0.1
	done
	grep -q 'p1: get xagg/0/p2: waiting (up to ' srv2.log ||
		{ cat srv2.log err1; false; }
	echo 0 >&8
	exec 8>&-
	wait $xpid1 && wait $xpid2
	grep -q 'p1: get xagg/0/p2: [0-9]* bytes (waited)$' srv2.log
	[ "$(spirt-store -s s1 get gagg/0 | md5sum)" = \
	    "$(spirt-store -s s2 get gagg/0 | md5sum)" ]
}

@test "warm exchange: SIGTERM stops a round that waits, before the deadline, and nothing of it is signed" {
	stores3
	mkfifo in1
	warm 1 in1 -P peers --deadline 100000
	exec 8>in1
	echo 0 >&8
	# its round has begun (its own aggregate published: its loop, and
	# so its handler, is there), then waits
	for k in $(seq 1 100); do
		spirt-store -s s1 ls xagg/0/p1 2>/dev/null | grep -q . && break
		sleep 0.1
	done
	spirt-store -s s1 ls xagg/0/p1 | grep -q .
	# (xpid1 is timeout(1)'s, which passes the signal on)
	kill -TERM $xpid1
	# (bounded: well before the 100 s deadline)
	for k in $(seq 1 150); do
		kill -0 $xpid1 2>/dev/null || break
		sleep 0.1
	done
	! kill -0 $xpid1 2>/dev/null
	exec 8>&-
	s=0
	wait $xpid1 || s=$?
	[ "$s" -eq 75 ] || { cat out1 err1; false; }
	[ "$(cat out1)" = "step=0 error=75" ]
	run -66 spirt-store -s s1 get digest/0/p1
	run -66 spirt-store -s s1 get gagg/0
}

# ---- spirt-train's bound on its server's start ----

@test "spirt-train --peers: a server that never says it listens stops the run after --deadline (75)" {
	[ -r "$FMNIST/train-images-idx3-ubyte.gz" ] ||
		skip "no Fashion-MNIST (Debian package dataset-fashion-mnist)"
	# a spirt-peer whose serve hangs (a store it waits for, a stopped
	# process): it neither writes its address nor exits
	mkdir bin
	cat >bin/spirt-peer <<SH
#!/bin/sh
[ "\$1" = serve ] && echo \$\$ >"$PWD/serve.pid" && exec sleep 300
exec "$SPIRT_ROOT/spirt-peer" "\$@"
SH
	chmod +x bin/spirt-peer
	spirt-peer keygen p0.key >/dev/null
	printf 'p0 http://127.0.0.1:1\np1 http://127.0.0.1:2\n' >peers
	SPIRT_KEY=p0.key SPIRT_ID=p0 SPIRT_RUN=r1 SPIRT_ALLOW=/dev/null \
	    PATH="$PWD/bin:$PATH" run -75 --separate-stderr timeout 120 \
	    spirt-train -q -s s0 -n 1 -b 16 --peers peers --peer 0 --steps 2 \
	    --deadline 1500
	[[ "$stderr" == *"spirt-train: --peers peers: spirt-peer serve did not say it listens on 127.0.0.1:1 within 11500 ms (--deadline and the port's retries)"* ]]
	# the hung server is gone
	[ -s serve.pid ]
	! kill -0 "$(cat serve.pid)" 2>/dev/null
	run -66 spirt-store -s s0 get model/mlp@1
}

@test "spirt-train --peers: a warm exchange that dies stops the run with 75 and says so" {
	[ -r "$FMNIST/train-images-idx3-ubyte.gz" ] ||
		skip "no Fashion-MNIST (Debian package dataset-fashion-mnist)"
	spirt-peer keygen p0.key >/dev/null
	echo "p0 $PWD/s0" >peers
	SPIRT_KEY=p0.key SPIRT_ID=p0 SPIRT_RUN=r1 timeout 300 spirt-train -q \
	    -s s0 -n 1 -b 16 --peers "$PWD/peers" --peer 0 --steps 100000 \
	    --eval-every 100000 >o 2>e &
	tp=$!
	XCHS="$XCHS $tp"
	# the warm exchange of this run (a child of its driver's spirt-run;
	# the driver is timeout's), once it has done a round
	xp=
	for k in $(seq 1 300); do
		dp=$(pgrep -P "$tp" | head -n 1)
		sp=
		[ -z "$dp" ] || sp=$(pgrep -P "$dp" -x spirt-run) || :
		[ -z "$sp" ] || xp=$(pgrep -P "$sp" -f \
		    "spirt-peer exchange .*-P $PWD/peers" | head -n 1)
		[ -n "$xp" ] && spirt-store -s s0 ls gagg/ 2>/dev/null | grep -q . &&
			break
		sleep 0.1
	done
	[ -n "$xp" ] || { cat e; false; }
	kill -KILL "$xp"
	s=0
	wait $tp || s=$?
	[ "$s" -eq 75 ] || { cat e; false; }
	grep -q "spirt-train: step [0-9]*: exchange: warm spirt-peer (pid $xp) was killed by signal 9; rerun to resume" e
}

@test "warm exchange: a peer's store whose scratch environment is made after the first look is seen" {
	stores3
	grep -v '^p3 ' peers >peers2
	# p2's store as a reader finds it before its first write of this
	# boot: no scratch environment (where agg/ and xagg/ live) yet
	rm -rf s2/scratch s2/scratch.lock
	mkfifo in1 in2
	warm 1 in1 -P peers2
	# (p2's exchange opens its store only once in2 is opened)
	warm 2 in2 -P peers2
	exec 7>in1
	echo 0 >&7
	# p1 waits for xagg/0/p2, its handle on s2 opened; then p2's agg/0
	# (the scratch environment made), and p2's round
	sleep 1
	spirt-store -s s2 put agg/0 a2_0.rec
	exec 8>in2
	echo 0 >&8
	exec 7>&- 8>&-
	wait $xpid1 && wait $xpid2
	[[ "$(cat out1)" =~ ^step=0\ used=2\ peers=2 ]] || { cat out1 err1; false; }
	[ "$(spirt-store -s s1 get gagg/0 | md5sum)" = \
	    "$(spirt-store -s s2 get gagg/0 | md5sum)" ]
}
