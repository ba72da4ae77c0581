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

# stores s1..s4 with the same model/m@0 and each its own agg/0 (a1..a4,
# 1000 values; a4 far from the others), keys p1..p4, and a peers file
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
	: >peers
	for i in 1 2 3 4; do
		spirt-store -s s$i put model/m@0 m0.rec
		spirt-store -s s$i put agg/0 a$i.rec
		spirt-peer keygen p$i.key >/dev/null
		echo "p$i $PWD/s$i" >>peers
	done
}

# xch I ARGS...: peer I's exchange of step 0 in the background
xch() {
	local i=$1
	shift
	SPIRT_KEY=p$i.key SPIRT_ID=p$i SPIRT_RUN=r1 spirt-peer exchange -m m \
	    -s s$i -t 0 --deadline 20000 "$@" >out$i 2>err$i &
	eval "pid$i=\$!"
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
