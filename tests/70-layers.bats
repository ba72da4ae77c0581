#!/usr/bin/env bats
# 70-layers: layer-list models (spirt-model(5)): batch normalisation's
# running statistics as the model's state through init, grad and eval;
# resnet8 training on Fashion-MNIST, alone and across three peers

load helper
load bnnet

# a test that fails leaves no peer behind (each runs under timeout, which
# passes SIGTERM on to spirt-train)
teardown() {
	# shellcheck disable=SC2046
	kill $(jobs -p) 2>/dev/null || :
}

NET='net:1x6x6:conv3-4,bn,relu,res(conv3-4,bn,relu,conv3-4,bn),relu,gap,dense-3'

# 6x6 images of 3 classes, 60 rows in 2 shards, and a test set of 15
mkdata() {
	awk 'BEGIN { srand(7); for (i = 0; i < 60; i++) {
		printf "%d", i % 3
		for (j = 0; j < 36; j++)
			printf ",%.3f", ((j * (i % 3 + 1)) % 11) / 11 + rand() / 4
		printf "\n" } }' >train.csv
	head -n 15 train.csv >test.csv
	spirt-shard -q -n 2 train.csv
	spirt-shard -q -d test test.csv
}

# the values of record file $1, one a line
values() {
	"$PYTHON" -c "$PYREC
for v in load('$1')['a'].ravel(): print('%.9g' % v)"
}

@test "spirt-init writes a fresh state beside a layer list (means 0, variances 1)" {
	run -0 --separate-stderr spirt-init -v -m n "$NET"
	[[ "$stderr" == *"state: 24 values"* ]]
	run -0 spirt-store show mstate/n@0
	assert_line "name=$NET"
	assert_line 'step=0'
	assert_line 'shape=24'
	# three bn layers of 4 channels: each its means, then its variances
	spirt-store get mstate/n@0 >s0
	run -0 values s0
	[ "$(printf '%s\n' "${lines[@]:0:4}" "${lines[@]:8:4}" \
	    "${lines[@]:16:4}" | sort -u)" = 0 ]
	[ "$(printf '%s\n' "${lines[@]:4:4}" "${lines[@]:12:4}" \
	    "${lines[@]:20:4}" | sort -u)" = 1 ]
	# a model without state has none
	run -0 spirt-init -m c cnn:1x28x28-2-3-10
	run -66 spirt-store show mstate/c@0
	# the preset's canonical name
	run -0 spirt-init -m r resnet8:1x28x28-10
	run -0 spirt-store show model/r@0 mstate/r@0
	assert_line 'shape=77754'
	assert_line 'shape=672'
	run -0 spirt-init -m mb mobilenet:1x28x28-10-w16
	run -0 spirt-store show model/mb@0 mstate/mb@0
	assert_line 'name=mobilenet:1x28x28-10'
	assert_line 'shape=10938'
	assert_line 'shape=768'
}

@test "spirt-init --spec-of: the spec and lr of each model spirt-train names; each trains a step; 64 for another name" {
	# 8 images of 28x28 in 10 classes, one shard file
	awk 'BEGIN { srand(3); for (i = 0; i < 8; i++) { printf "%d", i
		for (j = 0; j < 784; j++) printf ",%.2f", rand()
		printf "\n" } }' >d.csv
	spirt-shard -q -o d.spt d.csv
	spirt-shard -q -s st.db -n 1 -d d d.csv
	run -0 spirt-init --spec-of resnet8
	assert_output 'resnet8:1x28x28-10 0.002'
	run -0 spirt-init --spec-of softmax
	assert_output 'softmax:784:10 0.01'
	for name in mlp cnn resnet8 resnet20 mobilenet softmax; do
		run -0 --separate-stderr spirt-init --spec-of "$name"
		read -r spec lr extra <<<"$output"
		[ -n "$lr" ] && [ -z "$extra" ] || fail "$name: '$output'"
		awk -v l="$lr" 'BEGIN { exit !(l + 0 > 0 && l + 0 < 1) }' ||
			fail "$name: lr $lr"
		case $spec in "$name":*) ;; *) fail "$name: spec $spec" ;; esac
		# the spec initialises, and one gradient of 4 images
		spirt-init -S 1 -o "m.$name" "$spec"
		run -0 spirt-store inspect "m.$name"
		assert_line "name=$spec"
		spirt-grad -p "m.$name" -D d.spt -b 4 -o "g.$name"
		run -0 spirt-store inspect "g.$name"
		assert_line --regexp '^loss=[0-9]'
		# spirt-train -m NAME trains that spec from that rate (its
		# front reads the same table), its -h names it
		run -0 --separate-stderr spirt-train -s st.db -m "$name" \
		    --steps 1 -n 1 -b 4 --train d --test d
		[[ "$stderr" == *"training $name ($spec) in st.db:"*", adam lr $lr,"* ]] ||
			fail "$name: $stderr"
		spirt-store -s st.db ls "model/$name@1" | grep -q .
		spirt-train -h | grep -q -- "--model NAME .*[ ,]$name[ ,]" ||
		    spirt-train -h | grep -A1 -- "--model NAME" | grep -qw "$name" ||
			fail "$name: not in spirt-train -h"
	done
	# spirt-model(5)'s table says the same, every name of it
	n=0
	while read -r _ name _ _ spec _ lr; do
		run -0 spirt-init --spec-of "$name"
		assert_output "$spec $lr"
		n=$((n + 1))
	done < <(grep '^\.It [a-z0-9]* Ta Li ' "$SPIRT_ROOT/man/spirt-model.5")
	[ "$n" = 6 ]
	run -64 --separate-stderr spirt-init --spec-of vgg
	assert_equal "$stderr" "spirt-init: --spec-of vgg: not a model spirt-train names (mlp, cnn, resnet8, resnet20, mobilenet, softmax)"
	assert_output ''
	# nothing else goes with it
	run -64 spirt-init --spec-of mlp mlp:4-3
	run -64 spirt-init --spec-of mlp -m m
	[ ! -e spirt.db ]
}

@test "spirt-grad writes state/<t>/<w>, the batch's statistics, bit-identical on reruns" {
	mkdata
	spirt-init -m n "$NET"
	run -0 spirt-grad -m n -t 0 -w 1 -b 16
	run -0 spirt-store show state/0/1
	assert_line "name=$NET"
	assert_line 'step=0'
	assert_line 'origin=1'
	assert_line 'samples=16'
	assert_line 'shape=24'
	spirt-store get state/0/1 >s1
	spirt-store get grad/0/1 >g1
	spirt-store get mstate/n@0 >s0
	# the running statistics moved (momentum 0.1 towards the batch's)
	! cmp -s s0 s1
	run -0 values s1
	[ "${lines[0]}" != 0 ] && [ "${lines[4]}" != 1 ]
	# the same invocation again: the same bytes, state and gradient
	spirt-grad -m n -t 0 -w 1 -b 16
	spirt-store get state/0/1 | cmp - s1
	spirt-store get grad/0/1 | cmp - g1
	# -o: the gradient only
	spirt-grad -m n -t 0 -w 0 -b 16 -o g0
	run -66 spirt-store show state/0/0
	# agg appends the states, update writes mstate@1 from them
	spirt-grad -m n -t 0 -w 0 -b 16
	run -0 spirt-agg -t 0
	run -0 spirt-store show agg/0
	assert_line "shape=$(( $(spirt-store show model/n@0 |
	    sed -n 's/^shape=//p') + 24 ))"
	run -0 spirt-update -m n -t 0
	run -0 spirt-store show mstate/n@1
	assert_line 'step=1'
}

@test "dropout: a rerun draws the same masks, another seed others; evaluation passes through" {
	mkdata
	d='net:1x6x6:conv3-4,relu,dropout50,flatten,dense-8,relu,dropout25,dense-3'
	nd='net:1x6x6:conv3-4,relu,flatten,dense-8,relu,dense-3'
	spirt-shard -q -o train.spt train.csv
	spirt-shard -q -d test -o test.spt test.csv
	# the same weights (dropout has none)
	spirt-init -S 4 -o m "$d"
	spirt-init -S 4 -o m0 "$nd"
	spirt-grad -p m -D train.spt -b 16 -S 1 -o a
	spirt-grad -p m -D train.spt -b 16 -S 1 -o b
	cmp a b
	spirt-grad -p m -D train.spt -b 16 -S 2 -o c
	! cmp -s a c
	spirt-grad -p m0 -D train.spt -b 16 -S 1 -o n
	run -0 spirt-store inspect a n
	[ "$(printf '%s\n' "${lines[@]}" | grep -c '^loss=')" = 2 ]
	[ "$(printf '%s\n' "${lines[@]}" | grep '^loss=' | sort -u |
	    wc -l)" = 2 ]
	# evaluation passes the values through: the same loss as without
	run -0 spirt-eval -p m -D test.spt
	e1=$(printf '%s\n' "${lines[@]}" | grep '^loss=')
	run -0 spirt-eval -p m0 -D test.spt
	assert_line "$e1"
}

@test "spirt-grad fails 66 without the model's state, and writes nothing" {
	mkdata
	spirt-init -o m0 "$NET"
	spirt-store put model/n@0 m0
	run -66 --separate-stderr spirt-grad -m n -t 0 -b 8
	[ "$stderr" = "spirt-grad: mstate/n@0: no such key" ] ||
		fail "$stderr"
	run -0 spirt-store ls grad/
	assert_output ''
	run -0 spirt-store ls state/
	assert_output ''
	run -66 spirt-eval -m n
}

@test "spirt-eval normalises with the model's state" {
	mkdata
	spirt-init -m n -S 2 -t 0 "$NET"
	spirt-init -m n -S 2 -t 1 "$NET"
	run -0 spirt-eval -m n -t 0
	assert_line --regexp '^loss='
	l0=$(printf '%s\n' "${lines[@]}" | grep '^loss=')
	# the same weights, other running statistics: another loss
	spirt-grad -m n -t 1 -b 32
	spirt-store get state/1/0 >s
	spirt-store put mstate/n@1 s
	run -0 spirt-eval -m n -t 1
	l1=$(printf '%s\n' "${lines[@]}" | grep '^loss=')
	[ "$l0" != "$l1" ] || fail "$l0 both"
	# a fresh state again gives the first; a state of another step is
	# refused
	spirt-init -m n -S 2 -t 2 "$NET"
	run -0 spirt-eval -m n -t 2
	assert_line "$l0"
	spirt-store get mstate/n@0 | spirt-store put mstate/n@1
	run -65 --separate-stderr spirt-eval -m n -t 1
	[[ "$stderr" == *"mstate/n@1: record says step 0, want 1"* ]] ||
		fail "$stderr"
}

@test "spirt-train -m resnet8 trains on Fashion-MNIST: the loss falls, the state moves" {
	[ -r "$FMNIST/train-images-idx3-ubyte.gz" ] ||
		skip "no Fashion-MNIST (Debian package dataset-fashion-mnist)"
	# (the evaluation of 10,000 images at the end takes over 30 s in
	# CI's sanitizer build under load: a longer deadline)
	run -0 --separate-stderr spirt-train --steps 30 -m resnet8 -n 2 \
	    -b 32 --deadline 600000 -s r.db
	[[ "$stderr" == *"training resnet8 (resnet8:1x28x28-10)"* ]]
	# from ln 10 = 2.30 at the start; the loss from the log's row (the
	# progress line comes every 2 s: a run shorter than that has none)
	loss=$(awk -F'\t' '$2 == 30 { print $4 }' r.db.train-resnet8.tsv)
	acc=$(printf '%s\n' "$stderr" | sed -n 's/.*step 30: test loss [0-9.]*, accuracy \([0-9.]*\)$/\1/p')
	[ -n "$loss" ] && [ -n "$acc" ] || fail "$stderr"
	awk -v l="$loss" -v a="$acc" 'BEGIN { exit !(l < 1.9 && a > 0.3) }' ||
		fail "loss $loss, accuracy $acc after 30 steps"
	spirt-store -s r.db get mstate/resnet8@30 >s30
	spirt-store -s r.db show mstate/resnet8@30 | grep -qx 'shape=672'
	run -0 values s30
	[ "${lines[0]}" != 0 ]
}

@test "three peers train resnet8 over HTTP: one model and one state, the mean of all six functions' states" {
	[ -r "$FMNIST/train-images-idx3-ubyte.gz" ] ||
		skip "no Fashion-MNIST (Debian package dataset-fashion-mnist)"
	# 480 training images in 6 shards, 200 test images (tests/bnnet.bash)
	bnnet_data .
	httppeers 3
	for i in 0 1 2; do
		spirt-shard -s s$i -q -n 6 --seed 1 X.npy y.npy
		spirt-shard -s s$i -q -d test tX.npy ty.npy
	done
	STEPS=3
	for i in 0 1 2; do
		SPIRT_KEY=p$i.key SPIRT_TOKEN=p$i.tok SPIRT_GROUP=group.pub \
		    timeout 300 spirt-train -q -s s$i -m resnet8 -n 2 -b 16 \
		    --peers peers --peer $i --steps $STEPS --eval-every $STEPS \
		    --deadline 120000 >o$i 2>e$i &
		eval "pid$i=\$!"
	done
	for i in 0 1 2; do
		eval "wait \$pid$i" || fail "peer $i: $(cat e$i)"
	done
	# the rounds went over HTTP, nothing refused
	for i in 0 1 2; do
		grep -q '^spirt-peer: stopped: [1-9][0-9]* served, 0 refused$' \
		    e$i || fail "peer $i: $(cat e$i)"
	done
	# the same model and the same state on every peer
	for k in model/resnet8@$STEPS mstate/resnet8@$STEPS; do
		spirt-store -s s0 get "$k" >one.rec
		for i in 1 2; do
			spirt-store -s s$i get "$k" | cmp - one.rec ||
				fail "peer $i: $k differs"
		done
	done
	# the state of the last step: the mean of what the six functions
	# of the step before measured, two in each peer's store (peer i's
	# workers 2i and 2i+1), each from mstate@t
	t=$((STEPS - 1))
	for i in 0 1 2; do
		for w in $((2 * i)) $((2 * i + 1)); do
			spirt-store -s s$i get state/$t/$w >st$w.rec
		done
	done
	spirt-store -s s0 get mstate/resnet8@$t >mt.rec
	"$PYTHON" -c "$PYREC
m, mt = load('one.rec'), load('mt.rec')
assert m['step'] == $STEPS and m['a'].size == 672, m
ws = [load('st%d.rec' % w) for w in range(6)]
o = [st.read_record(open('st%d.rec' % w, 'rb')).origin for w in range(6)]
assert o == list(range(6)), o
assert all(w['step'] == $t and w['a'].size == 672 for w in ws)
# each function's batch moved the statistics its own way
assert len(set(w['a'].tobytes() for w in ws)) == 6
assert all(np.abs(w['a'] - mt['a']).max() > 1e-4 for w in ws)
want = np.mean([w['a'].astype(np.float64) for w in ws], axis=0)
d = np.abs(m['a'].astype(np.float64) - want).max()
assert d <= 1e-6, 'maxdiff %g' % d
assert np.abs(m['a'] - mt['a']).max() > 1e-4, 'no change'
"
}
