#!/usr/bin/env bats
# 54-every: exchanges every H steps (spirt-train --every): the round's
# delta (spirt-update --delta), the exchange of deltas (spirt-peer
# exchange -a delta), the outer step (spirt-update --outer), and three
# peers on one machine whose synced models are bit-identical

load helper

# a test that fails or is interrupted leaves no peer behind: each runs
# under timeout, which passes SIGTERM on to spirt-train, whose trap ends
# its server and tools
teardown() {
	# shellcheck disable=SC2046
	kill $(jobs -p) 2>/dev/null || :
}

# a model m:1000 at step 0 and aggregates agg/0, agg/1 in $SPIRT_STORE
# and as .npy files beside it
model01() {
	"$PYTHON" -c "$PYREC
rng = np.random.default_rng(5)
m = rng.standard_normal(1000).astype(np.float32)
np.save('m0.npy', m)
open('m0.rec', 'wb').write(st.encode(m, name='m:1000', step=0))
for t in (0, 1):
    a = rng.standard_normal(1000).astype(np.float32)
    np.save('a%d.npy' % t, a)
    open('a%d.rec' % t, 'wb').write(st.encode(a, name='m:1000', step=t, samples=32, count=2))
g = rng.standard_normal(1000).astype(np.float32)
np.save('g.npy', g)
open('g.rec', 'wb').write(st.encode(g, name='m:1000', step=0, samples=96))
"
	spirt-store put model/m@0 m0.rec
	spirt-store put agg/0 a0.rec
	spirt-store put agg/1 a1.rec
}

@test "spirt-update --delta: the change since model@S, as an aggregate of step S, not model@t+1" {
	model01
	spirt-update -q -m m -r 0.1 -t 0
	run -0 spirt-update -q -m m -r 0.1 -t 1 --delta 0
	# the round's proof is delta/0; no model@2
	run -0 spirt-store ls model/m@
	refute_output --partial 'model/m@2'
	spirt-store get delta/0 >d.rec
	"$PYTHON" -c "$PYREC
m0 = np.load('m0.npy'); a0 = np.load('a0.npy'); a1 = np.load('a1.npy')
lr = np.float32(0.1)
m1 = m0 - lr * a0
m2 = m1 - lr * a1
r = load('d.rec')
assert r['step'] == 0 and r['name'] == 'm:1000', r
assert r['samples'] == 32, r['samples']
d = np.abs(r['a'].astype(np.float64) - (m0.astype(np.float64) - m2)).max()
assert d <= 1e-6, 'maxdiff %g' % d
"
	# exactly once: again, nothing changes
	before=$(store_digest "$SPIRT_STORE")
	run -0 spirt-update -q -m m -r 0.1 -t 1 --delta 0
	[ "$(store_digest "$SPIRT_STORE")" = "$before" ]
}

@test "spirt-update --outer: model@t+n = model@t - the aggregate, bit for bit" {
	model01
	spirt-store put gagg/0 g.rec
	run -0 spirt-update -q -m m -a gagg -t 0 --outer 3
	spirt-store get model/m@3 >m3.rec
	# float32 subtraction is exact IEEE arithmetic: numpy gives the bits
	"$PYTHON" -c "$PYREC
m0 = np.load('m0.npy'); g = np.load('g.npy')
r = load('m3.rec')
assert r['step'] == 3 and r['name'] == 'm:1000', r
assert np.array_equal(r['a'].view(np.uint32), (m0 - g).view(np.uint32))
"
	# no optimiser state is made by the outer step
	run -0 spirt-store ls opt/
	assert_output ''
	before=$(store_digest "$SPIRT_STORE")
	run -0 spirt-update -q -m m -a gagg -t 0 --outer 3
	[ "$(store_digest "$SPIRT_STORE")" = "$before" ]
}

@test "spirt-update --delta, --outer: misuse is 64, a delta base after the step is refused; nothing changes" {
	model01
	before=$(store_digest "$SPIRT_STORE")
	run -64 spirt-update -q -m m --delta 0
	assert_output --partial 'need -t'
	run -64 spirt-update -q -m m -t 0 --outer 0
	run -64 spirt-update -q -m m -t 0 --outer x
	run -64 spirt-update -q -m m -t 1 --delta 0 --outer 1
	run -64 spirt-update -q -m m -t 0 --delta 0 --serve
	run -65 spirt-update -q -m m -t 0 --delta 1
	assert_output --partial 'after step 0'
	# the outer step wants the aggregate of step t
	run -66 spirt-update -q -m m -a gagg -t 0 --outer 1
	[ "$(store_digest "$SPIRT_STORE")" = "$before" ]
}

@test "spirt-update --serve: delta=, outer= and agg= words give the cold runs' bytes; misuse is error=64" {
	model01
	spirt-store put gagg/0 g.rec
	cp -r "$SPIRT_STORE" warm.db
	# cold: a local step, the round's delta, the outer step
	spirt-update -q -m m -r 0.1 --opt momentum -t 0
	spirt-update -q -m m -r 0.1 --opt momentum -t 1 --delta 0
	spirt-update -q -m m -r 0.1 --opt momentum -a gagg -t 0 --outer 2
	# warm: the same three as requests, misuse between them answered
	# error=64 (65: a delta base after the step) and nothing run
	printf '%s\n' 0 '1 delta=0 outer=2' '0 outer=0' '1 delta=x' \
	    '1 agg=no/such' '0 delta=1' '1 delta=0' '0 outer=2 agg=gagg' \
	    '0 agg=gagg outer=2' >req
	run -65 --separate-stderr spirt-update -q -s warm.db -m m -r 0.1 \
	    --opt momentum --serve <req
	[ "${lines[0]}" = 'step=0 lr=0.1' ]
	[ "${lines[1]}" = 'step=1 error=64' ]
	[ "${lines[2]}" = 'step=0 error=64' ]
	[ "${lines[3]}" = 'step=1 error=64' ]
	[ "${lines[4]}" = 'error=64' ]
	[ "${lines[5]}" = 'step=0 error=65' ]
	[ "${lines[6]}" = 'step=1 lr=0.1' ]
	[ "${lines[7]}" = 'step=0 lr=0.1' ]
	[ "${lines[8]}" = 'step=0 applied=already' ]
	[[ "${stderr_lines[0]}" == 'spirt-update: stdin:2: delta= and outer='* ]]
	[[ "${stderr_lines[1]}" == 'spirt-update: stdin:3: outer=: a count'* ]]
	# the same keys, the same bytes
	[ "$(spirt-store ls | cut -f1)" = "$(spirt-store -s warm.db ls | cut -f1)" ]
	for k in $(spirt-store ls | cut -f1); do
		[ "$(spirt-store get "$k" | md5sum)" = \
		    "$(spirt-store -s warm.db get "$k" | md5sum)" ] ||
			fail "$k differs warm and cold"
	done
	run -0 spirt-store ls model/m@2
	assert_output --partial model/m@2
}

@test "spirt-train --every: a bad H is refused with 64 before any work" {
	: >peers
	echo "p0 $PWD/s0" >peers
	for h in x -1 1.5 '' 1e3; do
		run -64 spirt-train -q -s s0 --peers peers --every "$h"
		[ ! -e s0 ]
	done
	run -64 spirt-train -q -s s0 --every 4
	assert_output --partial 'needs --peers'
	[ ! -e s0 ]
}

# ---- three peers on one machine ----

# train3 DIR ARGS...: three peers with stores DIR/s0..s2 train together
train3() {
	local d=$1 i
	shift
	mkdir -p "$d"
	: >"$d/peers"
	for i in 0 1 2; do
		[ -e p$i.key ] || spirt-peer keygen p$i.key >/dev/null
		echo "p$i $PWD/$d/s$i" >>"$d/peers"
	done
	for i in 0 1 2; do
		SPIRT_KEY=p$i.key SPIRT_ID=p$i SPIRT_RUN=r1 \
		    timeout 300 spirt-train -q -s "$d/s$i" -n 2 -b 16 \
		    --peers "$d/peers" --peer $i --deadline 60000 "$@" \
		    >"$d/o$i" 2>"$d/e$i" &
		eval "pid$i=\$!"
	done
	wait $pid0 && wait $pid1 && wait $pid2
}

@test "spirt-train --every 4: three peers, identical models after each exchange, local steps between" {
	[ -r "$FMNIST/train-images-idx3-ubyte.gz" ] ||
		skip "no Fashion-MNIST (Debian package dataset-fashion-mnist)"
	train3 e --steps 10 --every 4 --eval-every 5
	# rounds at 0, 4 and 8 (the last one short: the run ends at 10)
	for i in 0 1 2; do
		run -0 sh -c "spirt-store -s e/s$i ls delta/ | cut -f1"
		assert_output "$(printf 'delta/%s\n' 0 4 8)"
		# (its own: what it received is not stored, --keep-pulls)
		run -0 sh -c "spirt-store -s e/s$i ls xagg/ | cut -f1"
		assert_output "$(printf "xagg/%s/p$i\n" 0 4 8)"
	done
	# each round's signed digests, on every peer, name one model@S
	for s in 0 4 8; do
		for i in 0 1 2; do
			run -0 model_hashes e/s$i $s
			[ "${#lines[@]}" -eq 3 ]
			[ "$(printf '%s\n' "${lines[@]}" | sort -u | wc -l)" -eq 1 ]
		done
	done
	# the last synced model: the same bits everywhere ...
	h=$(spirt-store -s e/s0 get model/mlp@10 | md5sum)
	[ "$(spirt-store -s e/s1 get model/mlp@10 | md5sum)" = "$h" ]
	[ "$(spirt-store -s e/s2 get model/mlp@10 | md5sum)" = "$h" ]
	# ... while the local steps between differ from peer to peer
	[ "$(spirt-store -s e/s0 get model/mlp@9 | md5sum)" != \
	    "$(spirt-store -s e/s1 get model/mlp@9 | md5sum)" ]
	# ... and gagg/8, which the outer step subtracts from model@8 (its
	# arithmetic: the --outer test above), is the mean of the deltas,
	# this peer's own delta among them
	[ "$(spirt-store -s e/s0 get delta/8 | md5sum)" = \
	    "$(spirt-store -s e/s0 get xagg/8/p0 | md5sum)" ]
	spirt-store -s e/s0 get gagg/8 >g8.rec
	for i in 0 1 2; do
		spirt-store -s e/s$i get xagg/8/p$i >x$i.rec
	done
	"$PYTHON" -c "$PYREC
d = np.mean([load('x%d.rec' % i)['a'].astype(np.float64) for i in (0, 1, 2)], axis=0)
g = load('g8.rec')['a'].astype(np.float64)
assert np.abs(g - d).max() <= 1e-6
assert np.abs(d).max() > 0
"
}

@test "spirt-train --every 4: the rounds' steps go to the warm spirt-update, the models of --cold bit for bit" {
	[ -r "$FMNIST/train-images-idx3-ubyte.gz" ] ||
		skip "no Fashion-MNIST (Debian package dataset-fashion-mnist)"
	train3 w --steps 10 --every 4 --eval-every 10 -v
	train3 c --steps 10 --every 4 --eval-every 10 --cold
	# no spirt-update process a round: the delta and the outer step are
	# requests to the warm one (rounds at 0, 4 and 8, the last short)
	run -0 awk '/^\+ spirt-update / && !/ -i <<< / { n++ }
		END { print n + 0 }' w/e0
	assert_output 0
	run -0 sh -c "sed -n 's/^+ spirt-update .* -i <<< //p' w/e0"
	assert_output "$(printf '%s\n' '3 delta=0' '0 outer=4 agg=gagg' \
	    '7 delta=4' '4 outer=4 agg=gagg' '9 delta=8' '8 outer=2 agg=gagg')"
	for i in 0 1 2; do
		[ "$(spirt-store -s w/s$i get model/mlp@10 | md5sum)" = \
		    "$(spirt-store -s c/s$i get model/mlp@10 | md5sum)" ] ||
			fail "peer $i: warm and cold models differ"
		[ "$(spirt-store -s w/s$i get delta/8 | md5sum)" = \
		    "$(spirt-store -s c/s$i get delta/8 | md5sum)" ]
	done
}

@test "spirt-train --every 10: spent rounds pruned, their digests kept with --keep-digests" {
	[ -r "$FMNIST/train-images-idx3-ubyte.gz" ] ||
		skip "no Fashion-MNIST (Debian package dataset-fashion-mnist)"
	train3 k --steps 30 --every 10 --eval-every 30 --keep-digests
	for i in 0 1 2; do
		# round 20 removed round 0 (a peer a round behind finds 10) ...
		run -0 sh -c "spirt-store -s k/s$i ls xagg/ | cut -f1 | cut -d/ -f2 | sort -nu"
		assert_output "$(printf '%s\n' 10 20)"
		# ... but not its signed digests, which were to be kept
		run -0 sh -c "spirt-store -s k/s$i ls digest/ | cut -f1 | cut -d/ -f2 | sort -nu"
		assert_output "$(printf '%s\n' 0 10 20)"
	done
}

@test "spirt-train --every over HTTP: a peer ends once the others have its last round, not at --deadline" {
	[ -r "$FMNIST/train-images-idx3-ubyte.gz" ] ||
		skip "no Fashion-MNIST (Debian package dataset-fashion-mnist)"
	# three free ports of 127.0.0.1, three keys on one allowlist
	set -- $("$PYTHON" -c 'import socket
ss = [socket.socket() for _ in range(3)]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))')
	printf 'VERSION=1\nTYPE=spirt-allowlist\n' >allow
	: >hpeers
	for i in 0 1 2; do
		spirt-peer keygen h$i.key >h$i.hex
		echo "MEMBER=$(cat h$i.hex) peer p$i" >>allow
		echo "p$i http://127.0.0.1:$1" >>hpeers
		shift
	done
	echo END >>allow
	mkdir h
	# rounds at 0 and 4 (the last one short); each peer serves until
	# the others hold gagg/4, the last round's: it waited for gagg/5,
	# which no --every run makes, to the end of --deadline (here 10
	# minutes, past the bound: killed, 124)
	for i in 0 1 2; do
		SPIRT_KEY=h$i.key SPIRT_ID=p$i SPIRT_RUN=r1 SPIRT_ALLOW=allow \
		    timeout 120 spirt-train -q -s h/s$i -n 1 -b 16 \
		    --peers hpeers --peer $i --steps 6 --every 4 \
		    --deadline 600000 >h/o$i 2>h/e$i &
		eval "hp$i=\$!"
	done
	for i in 0 1 2; do
		eval "wait \$hp$i" || { cat h/e*; false; }
	done
	h=$(spirt-store -s h/s0 get model/mlp@6 | md5sum)
	for i in 0 1 2; do
		spirt-store -s h/s$i get gagg/4 >/dev/null
		[ "$(spirt-store -s h/s$i get model/mlp@6 | md5sum)" = "$h" ]
	done
}

@test "spirt-train --every 1 is the per-step exchange's model averaging (SGD)" {
	[ -r "$FMNIST/train-images-idx3-ubyte.gz" ] ||
		skip "no Fashion-MNIST (Debian package dataset-fashion-mnist)"
	train3 a --steps 6 -o sgd -l 0.05 --schedule constant
	train3 b --steps 6 -o sgd -l 0.05 --schedule constant --every 1
	# per-step: m - lr mean(g); every 1: m - mean(m - (m - lr g)): the
	# same up to rounding, and bit-identical across peers in each run
	h=$(spirt-store -s b/s0 get model/mlp@6 | md5sum)
	[ "$(spirt-store -s b/s1 get model/mlp@6 | md5sum)" = "$h" ]
	[ "$(spirt-store -s b/s2 get model/mlp@6 | md5sum)" = "$h" ]
	spirt-store -s a/s0 get model/mlp@6 >a6.rec
	spirt-store -s b/s0 get model/mlp@6 >b6.rec
	spirt-init -q -m mlp -S 1 -o a0.rec mlp:784-256-128-10
	"$PYTHON" -c "$PYREC
a = load('a6.rec')['a'].astype(np.float64)
b = load('b6.rec')['a'].astype(np.float64)
m0 = load('a0.rec')['a'].astype(np.float64)
moved = np.abs(a - m0).max()
assert moved > 1e-3, moved
d = np.abs(a - b).max()
assert d <= 1e-5, 'maxdiff %g' % d
"
}
