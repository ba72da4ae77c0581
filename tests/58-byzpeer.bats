#!/usr/bin/env bats
# 58-byzpeer: Byzantine robustness across peers: self-centred clipping in
# spirt-peer exchange, a peer's crafted aggregate (spirt-attack -a), and
# spirt-train --byzantine peer:ATTACK, with an equivocating peer proven by
# its own signatures (evaluation only)

load helper

# the Python prelude and the references of contrib/python/byzantine_ref.py
PRELUDE="$PYREC
import byzantine_ref as ref
"

py() {
	"$PYTHON" -c "$PRELUDE$1"
}

# stores s1..s4 with the same model/m@0 (m0.rec; m0x.rec another) and
# each its own agg/0 (a1..a4, 1000 values; a4 far from the others), keys
# p1..p4, and a peers file (peerstores)
peers4() {
	py "
rng = np.random.default_rng(4)
open('m0.rec', 'wb').write(st.encode(rng.standard_normal(1000).astype(np.float32), name='m:1000', step=0))
open('m0x.rec', 'wb').write(st.encode(rng.standard_normal(1000).astype(np.float32), name='m:1000', step=0))
base = rng.standard_normal(1000)
for i in (1, 2, 3, 4):
    a = (base + 0.3 * rng.standard_normal(1000)).astype(np.float32)
    if i == 4:
        a = (-10 * base).astype(np.float32)
    np.save('a%d.npy' % i, a)
    open('a%d.rec' % i, 'wb').write(st.encode(a, name='m:1000', step=0, samples=32))
"
	peerstores 4
}

# gagg_is STORE PYEXPR: gagg/0 of STORE is within 1e-5 of the expression
# (A[i]: peer i's aggregate, float64)
gagg_is() {
	spirt-store -s "$1" get gagg/0 >g.rec
	py "
A = [None] + [np.load('a%d.npy' % i).astype(np.float64) for i in (1, 2, 3, 4)]
X = np.stack(A[1:])
want = $2
got = load('g.rec')['a']
d = np.abs(got - want).max()
assert d <= 1e-5 * max(1, np.abs(want).max()), 'maxdiff %g' % d
"
}

@test "scclip: each peer clips the others around its own aggregate, as the reference" {
	peers4
	for i in 1 2 3 4; do
		xch $i -P peers -r scclip --tau auto --byzantine 1
	done
	wait $pid1 && wait $pid2 && wait $pid3 && wait $pid4
	for i in 1 2 3 4; do
		[ ! -s err$i ] || { cat err$i; false; }
		gagg_is s$i "ref.scclip(X, $((i - 1)), None, f=1)"
	done
	# each its own: the honest peers' results differ, and are near their
	# own aggregates, not near the mean the Byzantine one drags away
	[ "$(spirt-store -s s1 get gagg/0 | md5sum)" != \
	    "$(spirt-store -s s2 get gagg/0 | md5sum)" ]
	spirt-store -s s1 get gagg/0 >g.rec
	py "
A1, X = np.load('a1.npy'), np.stack([np.load('a%d.npy' % i) for i in (1, 2, 3, 4)])
g = load('g.rec')['a']
assert np.linalg.norm(g - A1) < np.linalg.norm(X.mean(0) - A1) / 3"
	# a fixed radius: the same rule with tau 2
	mkdir tau2 && cd tau2
	peers4
	for i in 1 2 3 4; do
		xch $i -P peers -r scclip --tau 2
	done
	wait $pid1 && wait $pid2 && wait $pid3 && wait $pid4
	gagg_is s3 "ref.scclip(X, 2, 2.0)"
	run -0 sh -c 'spirt-store -s s3 get gagg/0/round | tr -c "[:print:]\n" " "'
	assert_output --partial 'rule=scclip'
}

@test "scclip: peers' models are their own, so no model check stops them" {
	peers4
	# p3's model differs: under the mean it would stop (65); under scclip
	# every peer combines
	spirt-store -s s3 put model/m@0 m0x.rec
	for i in 1 2 3 4; do
		xch $i -P peers -r scclip --tau auto --byzantine 1
	done
	wait $pid1 && wait $pid2 && wait $pid4
	status=0
	wait $pid3 || status=$?
	[ "$status" -eq 0 ] || { cat err3; false; }
	! grep -q 'model differs' err1
	gagg_is s3 "ref.scclip(X, 2, None, f=1)"
	# rule parameters are checked before any work
	SPIRT_KEY=p1.key SPIRT_ID=p1 SPIRT_RUN=r1 run -64 spirt-peer exchange \
	    -m m -s s1 -t 0 -P peers -r scclip --tau 0
	SPIRT_KEY=p1.key SPIRT_ID=p1 SPIRT_RUN=r1 run -64 spirt-peer exchange \
	    -m m -s s1 -t 0 -P peers -r scclip --iters 0
}

# ---- spirt-train --byzantine peer:ATTACK, four peers on one machine ----

# train4 BYZ RULE [P2FILE]: four peers of 2 functions each train 6 steps
# with --peer-rule RULE; peer 3 is Byzantine with BYZ (none: honest);
# peer 2 reads the peers file P2FILE (default peers); each stores what it
# received (--keep-pulls), as one would to look into an attack.  With a
# group key (httppeers: peers over HTTP) each peer shows its token too
train4() {
	local i byz pf auth
	[ -e peers ] || pathpeers 0 3
	for i in 0 1 2 3; do
		byz= pf=peers
		[ "$i" -ne 3 ] || [ "$1" = none ] || byz="--byzantine $1"
		[ "$i" -ne 2 ] || pf=${3:-peers}
		auth=
		[ ! -e group.pub ] ||
			auth="SPIRT_TOKEN=p$i.tok SPIRT_GROUP=group.pub"
		env SPIRT_KEY=p$i.key SPIRT_ID=p$i SPIRT_RUN=r1 $auth timeout 300 \
		    spirt-train -q -s s$i -n 2 --peers "$pf" --peer $i --steps 6 \
		    --eval-every 6 --deadline 60000 --peer-rule "$2" $byz \
		    --keep-pulls >o$i 2>e$i &
		eval "pid$i=\$!"
	done
	wait $pid0 && wait $pid1 && wait $pid2 && wait $pid3 ||
		{ cat e0 e1 e2 e3; return 1; }
}

# norms STORE T: the L2 norm of each xagg/T/p0..p3 in STORE
norms() {
	local i
	for i in 0 1 2 3; do
		spirt-store -s "$1" show "xagg/$2/p$i" | sed -n 's/^l2=//p'
	done
}

@test "spirt-train --byzantine peer:signflip: its crafted aggregate reaches every peer; the median keeps them one model" {
	[ -r "$FMNIST/train-images-idx3-ubyte.gz" ] || skip "no Fashion-MNIST"
	train4 peer:signflip median
	h=$(spirt-store -s s0 get model/mlp@6 | md5sum)
	for i in 1 2 3; do
		[ "$(spirt-store -s s$i get model/mlp@6 | md5sum)" = "$h" ]
	done
	# p3's aggregate, as every peer received it, is ten times its honest
	# one turned round: far larger than the others'
	run -0 norms s1 5
	"$PYTHON" -c "
n = [float(x) for x in '''$output'''.split()]
assert len(n) == 4 and min(n[3] / x for x in n[:3]) > 3, n"
	[ "$(spirt-store -s s0 get xagg/5/p3 | md5sum)" = \
	    "$(spirt-store -s s2 get xagg/5/p3 | md5sum)" ]
	# the log says it, evaluation only
	run -0 cat e3
	[ -z "$output" ]
	echo "p3 $PWD/solo.db" >solo
	SPIRT_KEY=p3.key SPIRT_ID=p3 SPIRT_RUN=r1 run -0 --separate-stderr \
	    spirt-train -s solo.db -n 2 --peers solo --steps 1 \
	    --peer-rule median --byzantine peer:signflip
	[[ "$stderr" == *"across peers median, byzantine peer: signflip (evaluation only)"* ]]
	# the mean lets it through: another model than the median's
	mkdir mean && cd mean
	train4 peer:signflip mean
	! spirt-store -s s0 get model/mlp@6 | cmp -s - <(spirt-store -s ../s0 get model/mlp@6)
}

@test "spirt-train --byzantine peer:equivocate:A: two stories, each signed; the honest peers prove it and agree" {
	[ -r "$FMNIST/train-images-idx3-ubyte.gz" ] || skip "no Fashion-MNIST"
	pathpeers 0 3
	# p2 pulls p3's other story: s3.fork
	sed "s,$PWD/s3\$,$PWD/s3.fork," peers >peers2
	train4 peer:equivocate:scale:-5 median peers2
	equivocated
}

# equivocated: after train4 with p3 equivocating (scale:-5) to p2: what
# the honest peers hold and prove
equivocated() {
	# the honest three hold one model, which p3 does not
	h=$(spirt-store -s s0 get model/mlp@6 | md5sum)
	[ "$(spirt-store -s s1 get model/mlp@6 | md5sum)" = "$h" ]
	[ "$(spirt-store -s s2 get model/mlp@6 | md5sum)" = "$h" ]
	[ "$(spirt-store -s s3 get model/mlp@6 | md5sum)" != "$h" ]
	# every honest peer left p3 out of every round it still keeps, as an
	# equivocator, with the proof: two digests p3 signed for one step
	# (each round removes those before the one before: 4 and 5 are kept)
	for i in 0 1 2; do
		for t in 4 5; do
			run -0 sh -c "spirt-store -s s$i get gagg/$t/round | tr -c '[:print:]\n' ' '"
			assert_output --partial "peer=p3 equivocated: two digests it signed for step $t name different aggregates"
		done
		# (the proofs: on the exchange's stdout when it runs a process a
		# round, on its stderr when warm, as spirt-train runs it)
		[ "$(cat o$i e$i | grep -c '^id=p3$')" -eq 12 ]
		[ "$(cat o$i e$i | grep '^key=' | sort -u | wc -l)" -eq 1 ]
	done
	# the two stories: p0 got p3's honest aggregate, p2 the crafted one,
	# five times it turned round
	spirt-store -s s0 get xagg/5/p3 >x0.rec
	spirt-store -s s2 get xagg/5/p3 >x2.rec
	py "
a, b = load('x0.rec')['a'].astype(np.float64), load('x2.rec')['a']
assert np.abs(b - (-5 * a)).max() <= 1e-5 * np.abs(a).max() * 5"
}

@test "spirt-train --byzantine peer:equivocate@HOST:PORT:A over HTTP: the other story served beside, each signed; the honest peers prove it and agree" {
	[ -r "$FMNIST/train-images-idx3-ubyte.gz" ] || skip "no Fashion-MNIST"
	# four peers over loopback, and a fifth free port for p3's other
	# story (p4's line dropped)
	httppeers 5
	fork=$(sed -n 's,^p4 http://,,p' peers)
	sed -i '/^p4 /d' peers
	# p2 pulls p3's other story, which p3 serves at $fork
	sed "s,^p3 .*,p3 http://p3@$fork," peers >peers2
	train4 "peer:equivocate@$fork:scale:-5" median peers2
	equivocated
	# p3 served both stories, its store and the fork, under its identity
	grep -q "^spirt-peer: listening on $fork as p3 (run r1)$" e3
	[ "$(grep -c '^spirt-peer: listening on 127.0.0.1:[0-9]* as p3 (run r1)$' e3)" -eq 2 ]
	[ "$(grep -c '^spirt-peer: stopped: [1-9][0-9]* served, 0 refused$' e3)" -eq 2 ]
	[ -z "$(pgrep -f "$BATS_TEST_TMPDIR")" ]
}

@test "spirt-train --byzantine peer:labelflip: every function of that peer flips its labels" {
	[ -r "$FMNIST/train-images-idx3-ubyte.gz" ] || skip "no Fashion-MNIST"
	train4 peer:labelflip median
	# p3's functions are workers 6 and 7 of the 4 x 2
	for w in 6 7; do
		spirt-grad -s s3 -m mlp -t 5 -w $w -b 32 -S 1 --label-flip -o - |
			cmp - <(spirt-store -s s3 get grad/5/$w)
	done
	# an honest peer's functions wrote their slots (spirt-agg --slots):
	# worker 0's holds the unflipped gradient of the last step
	spirt-grad -s s0 -m mlp -t 5 -w 0 -b 32 -S 1 -o g0.rec
	"$PYTHON" -c "$PYREC
g = load('g0.rec')['a'].tobytes()
b = open('s0/scratch/slot.0', 'rb').read()
assert b[4096:] == g, (len(b), len(g))
"
}

@test "spirt-train: a Byzantine peer is its evaluation part's, read only when asked for" {
	# the production driver holds none of it; the part holds it all
	for f in 'byzpeer_check()' 'byzpeer_publish()' 'byzpeer_serve()' \
	    'expected peer:equivocate@' 'spirt-attack -q -S "$seed" -t "$1" -a agg'; do
		run -1 grep -cF "$f" "$SPIRT_ROOT/spirt-train.sh"
		run -0 grep -qF "$f" "$SPIRT_ROOT/spirt-train-byzpeer.sh"
	done
	# a driver without the part beside it trains as before ...
	mkdir alone
	ln -s "$SPIRT_ROOT/spirt-train" alone/
	echo "p0 $PWD/s0" >peers
	echo "p1 $PWD/s1" >>peers
	export SPIRT_KEY=k SPIRT_ID=p0 SPIRT_RUN=r1
	run -64 --separate-stderr alone/spirt-train --steps 1 -s s0 --peers peers --peer-rule bogus
	[[ "$stderr" == *"--peer-rule bogus: expected mean, median"* ]]
	# ... and a Byzantine peer it cannot play: 69, named, nothing made
	run -69 --separate-stderr alone/spirt-train --steps 1 -s s0 --peers peers --byzantine peer:signflip
	[ "$stderr" = "spirt-train: --byzantine peer:signflip: spirt-train-byzpeer.sh: not found beside spirt-train ($PWD/alone) or in $PWD/alone/../libexec/spirt" ]
	[ ! -e s0 ]
	# installed, it is read from ../libexec/spirt
	mkdir -p inst/bin inst/libexec/spirt
	ln -s "$SPIRT_ROOT/spirt-train" inst/bin/
	cp "$SPIRT_ROOT/spirt-train-byzpeer.sh" inst/libexec/spirt/
	run -64 --separate-stderr inst/bin/spirt-train --steps 1 -s s0 --peers peers --byzantine peer:nope
	[[ "$stderr" == *'unknown or malformed attack "nope"'* ]]
	[ ! -e s0 ]
}

@test "spirt-train --peer-rule scclip:auto: each peer its own model, none stops" {
	[ -r "$FMNIST/train-images-idx3-ubyte.gz" ] || skip "no Fashion-MNIST"
	train4 peer:gauss:100 scclip:auto
	h0=$(spirt-store -s s0 get model/mlp@6 | md5sum)
	[ "$(spirt-store -s s1 get model/mlp@6 | md5sum)" != "$h0" ]
	run -0 sh -c 'spirt-store -s s1 get gagg/5/round | tr -c "[:print:]\n" " "'
	assert_output --partial 'rule=scclip'
	assert_output --partial 'peer=p3 used'
	# the noise (norm about 100 x 490) moved no honest peer far: their
	# test accuracy after 6 steps is that of a start that learns
	for i in 0 1 2; do
		awk -F'\t' 'END { exit !($6 > 0.4) }' s$i.train-mlp.tsv ||
			{ cat s$i.train-mlp.tsv; false; }
	done
}

@test "spirt-train --byzantine peer: and --peer-rule: bad values are 64 before any work" {
	echo "p0 $PWD/s0" >peers
	echo "p1 $PWD/s1" >>peers
	echo "p0 http://127.0.0.1:1" >hpeers
	echo "p1 $PWD/s1" >>hpeers
	export SPIRT_KEY=k SPIRT_ID=p0 SPIRT_RUN=r1
	for b in peer: peer:bogus peer:scale peer:equivocate peer:equivocate: \
	    peer:equivocate:labelflip peer:equivocate:nope; do
		run -64 --separate-stderr spirt-train --steps 1 -s s0 --peers peers --byzantine "$b"
		[[ "$stderr" == "spirt-train: "* ]] || fail "$b: $stderr"
	done
	run -64 --separate-stderr spirt-train --steps 1 -s s0 --byzantine peer:signflip
	[[ "$stderr" == *"a Byzantine peer needs --peers"* ]]
	run -64 --separate-stderr spirt-train --steps 1 -s s0 --peers peers --every 5 --byzantine peer:signflip
	[[ "$stderr" == *"not with --every"* ]]
	# equivocation over HTTP names where the other story is served;
	# store paths take none
	run -64 --separate-stderr spirt-train --steps 1 -s s0 --peers hpeers --byzantine peer:equivocate:signflip
	[[ "$stderr" == *"over HTTP the other story is served at an address of its own: peer:equivocate@HOST:PORT:ATTACK"* ]]
	for b in equivocate@ equivocate@127.0.0.1 equivocate@127.0.0.1: \
	    equivocate@127.0.0.1:x:signflip equivocate@:2:signflip \
	    equivocate@127.0.0.1:0:signflip equivocate@a/b:2:signflip \
	    equivocate@127.0.0.1:123456:signflip; do
		run -64 --separate-stderr spirt-train --steps 1 -s s0 --peers hpeers --byzantine "peer:$b"
		[[ "$stderr" == *"expected peer:equivocate@HOST:PORT:ATTACK"* ]] || fail "$b: $stderr"
	done
	run -64 --separate-stderr spirt-train --steps 1 -s s0 --peers hpeers --byzantine peer:equivocate@127.0.0.1:70000:signflip
	[[ "$stderr" == *"port 70000 is out of range"* ]]
	run -64 --separate-stderr spirt-train --steps 1 -s s0 --peers hpeers --byzantine peer:equivocate@127.0.0.1:1:signflip
	[[ "$stderr" == *"127.0.0.1:1 is this peer's own address"* ]]
	run -64 --separate-stderr spirt-train --steps 1 -s s0 --peers hpeers --byzantine peer:equivocate@[::1]:2:nope
	[[ "$stderr" == *'unknown or malformed attack "nope"'* ]]
	run -64 --separate-stderr spirt-train --steps 1 -s s0 --peers peers --byzantine peer:equivocate@127.0.0.1:2:signflip
	[[ "$stderr" == *"a store path: the other story is s0.fork, no address"* ]]
	[ ! -e s0 ] && [ ! -e s0.fork ]
	for r in bogus trim: trim:x cclip: cclip:x scclip:1:x scclip:auto:1:2 krum:1; do
		run -64 --separate-stderr spirt-train --steps 1 -s s0 --peers peers --peer-rule "$r"
		[[ "$stderr" == *"--peer-rule $r: expected mean, median"* ]] || fail "$r: $stderr"
	done
	# the rule's own checks, for the smallest round (2 of 2 peers; 3 of 4):
	# a trim that cuts nothing
	run -64 --separate-stderr spirt-train --steps 1 -s s0 --peers peers --peer-rule trim:0.4
	[[ "$stderr" == *"--peer-rule trim:0.4: rule trim: --trim 0.4 of 2 inputs must cut"* ]]
	for i in 2 3; do echo "p$i $PWD/s$i" >>peers; done
	run -64 --separate-stderr spirt-train --steps 1 -s s0 --peers peers --peer-rule trim:0.25
	[[ "$stderr" == *"--peer-rule trim:0.25: rule trim: --trim 0.25 of 3 inputs must cut"* ]]
	run -64 --separate-stderr spirt-train --steps 1 -s s0 --peer-rule median
	[[ "$stderr" == *"--peer-rule median: it needs --peers"* ]]
	run -64 spirt-train --steps 1 -s s0 --worker-momentum 1
	run -64 spirt-train --steps 1 -s s0 --worker-momentum x
	[ ! -e s0 ]
}
