#!/usr/bin/env bats
# 31-attack: spirt-attack's attacks and spirt-grad --label-flip against
# NumPy (contrib/python/byzantine_ref.py), records kept valid, exit codes

load helper

PRELUDE="$PYREC"'
sys.path.insert(0, "'"$SPIRT_ROOT"'/contrib/python")
import byzantine_ref as ref
def rec(a, name="m:9", step=3, origin=None, samples=8, loss=1.0):
    return st.encode(np.asarray(a, dtype=np.float32), name=name, step=step,
                     origin=origin, samples=samples, loss=loss)
def recs(path):
    return list(st.read_records(open(path, "rb")))
G = np.random.default_rng(11).standard_normal((8, 9)).astype(np.float32)
'

py() {
	"$PYTHON" -c "$PRELUDE$1"
}

# grads W: all.rec, W records of step 3, origin w, loss w / 4
grads() {
	py "out(*[rec(G[w], origin=w, samples=8 + w, loss=w / 4) for w in range($1)])" >all.rec
}

# same OUT IN: the records of OUT are those of IN except at the origins
# listed in $2, whose values are WANT[origin] (a Python dict expression)
# within 1e-5; headers (name, step, origin, samples, loss) kept
same() {
	py "
a, b = recs('$1'), recs('all.rec')
bad = set($2); want = $3
assert len(a) == len(b), (len(a), len(b))
for x, y in zip(a, b):
    assert (x.name, x.step, x.origin, x.samples, x.loss) == \
        (y.name, y.step, y.origin, y.samples, y.loss), (x, y)
    if x.origin in bad:
        w = np.asarray(want[x.origin], np.float64)
        d = np.abs(x.array - w).max()
        assert d <= 1e-5 * max(1, np.abs(w).max()), ('maxdiff', x.origin, d)
    else:
        assert x.array.tobytes() == y.array.tobytes(), x.origin
"
}

@test "signflip, scale: -S * g and S * g of the chosen origins only" {
	grads 5
	spirt-attack -w 1,3 signflip <all.rec >sf.rec
	same sf.rec '[1, 3]' '{w: ref.signflip(G[w]) for w in (1, 3)}'
	spirt-attack -w 2 signflip:2.5 all.rec >sf2.rec
	same sf2.rec '[2]' '{2: ref.signflip(G[2], 2.5)}'
	spirt-attack scale:-3 all.rec >sc.rec
	same sc.rec 'range(5)' '{w: ref.scale(G[w], -3) for w in range(5)}'
	# valid records: the C reader checks every checksum
	run -0 spirt-store inspect sf.rec sc.rec
	refute_line --partial 'checksum=bad'
	[ "$(grep -c '^checksum=ok' <<<"$output")" -eq 10 ]
}

@test "gauss: N(0, sigma^2) from (seed, step, origin), as the reference" {
	grads 4
	spirt-attack -w 0,2 gauss all.rec >g.rec
	same g.rec '[0, 2]' '{w: ref.gauss(9, 100, 0, 3, w) for w in (0, 2)}'
	spirt-attack -S 7 -w 2 gauss:0.5 all.rec >g7.rec
	same g7.rec '[2]' '{2: ref.gauss(9, 0.5, 7, 3, 2)}'
	# another seed, another draw; the same seed, the same bytes
	spirt-attack -S 8 -w 2 gauss:0.5 all.rec >g8.rec
	! cmp -s g7.rec g8.rec
	spirt-attack -S 7 -w 2 gauss:0.5 all.rec | cmp - g7.rec
	# a large draw has the moments asked for
	py "out(*[rec(np.zeros(20000, np.float32), name='m:20000', origin=w) for w in range(2)])" >z.rec
	spirt-attack -w 1 gauss:100 z.rec >gz.rec
	py "a = recs('gz.rec')[1].array.astype(np.float64)
assert abs(a.mean()) < 3 and abs(a.std() - 100) < 3, (a.mean(), a.std())
assert not recs('gz.rec')[0].array.any()"
}

@test "alie: mean - z * std of the step, z from the paper's formula or given" {
	grads 8
	spirt-attack -w 1,6 alie all.rec >a.rec
	# n = 8, f = 2: s = 3, z = Phi^-1(5/8)
	py "assert abs(ref.alie_z(8, 2) - 0.318639) < 1e-5, ref.alie_z(8, 2)"
	same a.rec '[1, 6]' '{w: ref.alie(G[:8], 2) for w in (1, 6)}'
	spirt-attack -w 0 alie:1.5 all.rec >a15.rec
	same a15.rec '[0]' '{0: ref.alie(G[:8], 1, 1.5)}'
	# the default z needs f <= W/2: say so, write nothing
	run -64 --separate-stderr spirt-attack -w 0,1,2,3,4 alie all.rec
	[[ "$stderr" == *"alie: no z for 8 gradients of which 5 malicious"*"give alie:z"* ]]
	[ -z "$output" ]
	run -64 spirt-attack alie all.rec
	spirt-attack alie:1 all.rec >/dev/null
}

@test "ipm: -eps * mean of the step" {
	grads 6
	spirt-attack -w 4,5 ipm all.rec >i.rec
	same i.rec '[4, 5]' '{w: ref.ipm(G[:6]) for w in (4, 5)}'
	spirt-attack -w 0 ipm:2 all.rec >i2.rec
	same i2.rec '[0]' '{0: ref.ipm(G[:6], 2)}'
}

@test "-t attacks grad/<t>/* in the store in place, in one transaction" {
	grads 5
	for w in 0 1 2 3 4; do
		py "out(rec(G[$w], origin=$w, samples=8 + $w, loss=$w / 4))" >g$w.rec
		spirt-store put "grad/3/$w" "g$w.rec"
	done
	spirt-attack -t 3 -w 1,4 alie:0.7
	for w in 0 1 2 3 4; do spirt-store get "grad/3/$w"; done >st.rec
	same st.rec '[1, 4]' '{w: ref.alie(G[:5], 2, 0.7) for w in (1, 4)}'
	# the filter gives the same records
	spirt-attack -w 1,4 alie:0.7 all.rec | cmp - st.rec
	# an origin that is not there: 66, nothing written
	before=$(store_digest spirt.db)
	run -66 --separate-stderr spirt-attack -t 3 -w 1,9 signflip
	[[ "$stderr" == *"-w: no gradient from origin 9 among the 5 inputs"* ]]
	[ "$(store_digest spirt.db)" = "$before" ]
	run -66 --separate-stderr spirt-attack -t 4 -w 1 signflip
	[[ "$stderr" == *"no gradients for step 4"* ]]
	[ "$(store_digest spirt.db)" = "$before" ]
	run -66 spirt-attack -s nowhere.db -t 3 -w 1 signflip
	# -t needs -w, and takes no files or -o
	run -64 --separate-stderr spirt-attack -t 3 signflip
	[[ "$stderr" == *"-t needs -w"* ]]
	run -64 spirt-attack -t 3 -w 1 signflip all.rec
	run -64 spirt-attack -t 3 -w 1 -o x.rec signflip
	[ "$(store_digest spirt.db)" = "$before" ]
}

@test "-t, a model with state: the malicious functions' state/<t>/<w> attacked with their gradients, each under its own header" {
	# (G's rows: a gradient of 6 values, then a state of 3,
	# spirt-model(5); the aggregation set holds them end to end)
	for w in 0 1 2 3 4; do
		py "out(rec(G[$w, :6], name='m:6', origin=$w, samples=8 + $w))" >g$w.rec
		py "out(rec(G[$w, 6:], name='m:6', origin=$w, samples=8 + $w))" >s$w.rec
		spirt-store put "grad/3/$w" g$w.rec
		spirt-store put "state/3/$w" s$w.rec
	done
	spirt-attack -t 3 -w 1,4 alie:0.7
	for w in 0 1 2 3 4; do spirt-store get "grad/3/$w"; done >gg.rec
	for w in 0 1 2 3 4; do spirt-store get "state/3/$w"; done >ss.rec
	py "
want = ref.alie(G[:5], 2, 0.7).astype(np.float64)
for w, (g, s) in enumerate(zip(recs('gg.rec'), recs('ss.rec'))):
    assert (g.name, g.step, g.origin, g.samples, g.array.size) == \
        ('m:6', 3, w, 8 + w, 6), g
    assert (s.name, s.step, s.origin, s.samples, s.array.size) == \
        ('m:6', 3, w, 8 + w, 3), s
    v = np.concatenate([g.array, s.array]).astype(np.float64)
    x = want if w in (1, 4) else G[w].astype(np.float64)
    assert np.abs(v - x).max() <= 1e-5 * max(1, np.abs(x).max()), w
"
}

# aggstore: grad/3/0..4 and agg/3 (their mean, count 5) in the store
aggstore() {
	for w in 0 1 2 3 4; do
		py "out(rec(G[$w], origin=$w, samples=8 + $w, loss=$w / 4))" >g$w.rec
		spirt-store put "grad/3/$w" "g$w.rec"
	done
	py "
r = st.encode(G[:5].mean(0).astype(np.float32), name='m:9', step=3,
              samples=50, loss=0.5, count=5)
out(r)" >agg.rec
	spirt-store put agg/3 agg.rec
}

# crafted OUT PYEXPR: OUT is agg.rec's header with the values of PYEXPR
# (y: the honest aggregate, X: the gradients, float64) within 1e-5
crafted() {
	py "
a, h = recs('$1')[0], recs('agg.rec')[0]
y, X = h.array.astype(np.float64), G[:5].astype(np.float64)
assert (a.name, a.step, a.samples, a.loss, a.count) == \
    (h.name, h.step, h.samples, h.loss, h.count), (a, h)
w = np.asarray($2, np.float64)
d = np.abs(a.array - w).max()
assert d <= 1e-5 * max(1, np.abs(w).max()), ('maxdiff', d)
"
}

@test "-a: a Byzantine peer's aggregate, as the reference, to -o or in place" {
	aggstore
	spirt-attack -t 3 -a agg -o sf.rec signflip
	crafted sf.rec "ref.agg_attack('signflip', y)"
	spirt-attack -t 3 -a agg -o sc.rec scale:-3
	crafted sc.rec "ref.agg_attack('scale', y, p=-3)"
	spirt-attack -t 3 -a agg -o ip.rec ipm
	crafted ip.rec "ref.agg_attack('ipm', y)"
	spirt-attack -t 3 -a agg -o ga.rec -S 7 gauss:2
	crafted ga.rec "ref.agg_attack('gauss', y, p=2, seed=7, step=3)"
	spirt-attack -t 3 -a agg -o al.rec alie
	crafted al.rec "ref.agg_attack('alie', y, X)"
	spirt-attack -t 3 -a agg -o al2.rec alie:2.5
	crafted al2.rec "ref.agg_attack('alie', y, X, p=2.5)"
	# ALIE moves it by z times the spread of aggregates, not of gradients
	py "
a, y = recs('al.rec')[0].array, recs('agg.rec')[0].array
sd = G[:5].astype(np.float64).std(0, ddof=1)
assert np.allclose(np.abs(a - y), sd / np.sqrt(5), rtol=1e-4)"
	spirt-attack -t 3 -a agg -o - ipm | cmp - ip.rec
	# -o read nothing but wrote nothing to the store
	spirt-store get agg/3 | cmp - agg.rec
	# in place: agg/3 is replaced, the gradients are not
	before=$(for w in 0 1 2 3 4; do spirt-store get grad/3/$w; done | md5sum)
	run -0 --separate-stderr spirt-attack -v -t 3 -a agg alie
	[[ "$stderr" == *"agg/3: replaced (alie)"* ]]
	spirt-store get agg/3 | cmp - al.rec
	[ "$(for w in 0 1 2 3 4; do spirt-store get grad/3/$w; done | md5sum)" = "$before" ]
}

@test "-a: misuse 64, a missing aggregate 66, ALIE without gradients 64" {
	aggstore
	run -64 spirt-attack -a agg signflip
	run -64 spirt-attack -t 3 -a agg -w 1 signflip
	run -64 spirt-attack -t 3 -a agg signflip all.rec
	run -64 --separate-stderr spirt-attack -t 3 -a ../x signflip
	[[ "$stderr" == *'-a: invalid key prefix "../x"'* ]]
	before=$(store_digest spirt.db)
	run -66 --separate-stderr spirt-attack -t 4 -a agg signflip
	[[ "$stderr" == *"agg/4: "* ]]
	run -66 spirt-attack -t 3 -a gagg signflip
	[ "$(store_digest spirt.db)" = "$before" ]
	spirt-store put delta/3 agg.rec
	spirt-store rm grad/3/1 grad/3/2 grad/3/3 grad/3/4
	run -64 --separate-stderr spirt-attack -t 3 -a agg alie
	[[ "$stderr" == *"agg/3: alie on an aggregate needs the spread of at least 2 of the step's gradients, not 1"* ]]
	spirt-store rm grad/3/0
	run -66 spirt-attack -t 3 -a agg alie
	# another prefix (spirt-train --every publishes delta/<s>)
	spirt-attack -t 3 -a delta signflip:1
	spirt-store get delta/3 >d.rec
	crafted d.rec "-y"
}

@test "bad attacks and options: 64 with usage" {
	grads 3
	for a in bogus '' scale scale:x gauss:0 gauss:-1 ipm:0 signflip: \
	    'signflip: 1' alie:nan scale:inf 'ipm:1e999' signflipx; do
		run -64 --separate-stderr spirt-attack "$a" all.rec
		[[ "$stderr" == *"usage: spirt-attack"* ]] || fail "$a: $stderr"
	done
	run -64 --separate-stderr spirt-attack -w 1,1 signflip all.rec
	[[ "$stderr" == *"-w: origin 1 twice"* ]]
	run -64 spirt-attack -w x signflip all.rec
	run -64 spirt-attack -w 1, signflip all.rec
	run -64 spirt-attack -S -1 gauss all.rec
	run -64 spirt-attack
	run -66 --separate-stderr spirt-attack -w 7 signflip all.rec
	[[ "$stderr" == *"no gradient from origin 7"* ]]
}

@test "-h says evaluation only; the man page too" {
	run -0 spirt-attack -h
	assert_line --partial 'For evaluating robust aggregation only'
	run -0 grep -c 'valuation only' "$SPIRT_ROOT/man/spirt-attack.1"
	[ "$output" -ge 2 ]
}

@test "bad records: 65; missing input 66; output errors 73, 74" {
	grads 3
	head -c 100 all.rec >part.rec
	run -65 --separate-stderr spirt-attack signflip part.rec
	[[ "$stderr" == *"part.rec: record 0: truncated"* ]]
	[ -z "$output" ]
	: >empty.rec
	run -65 --separate-stderr spirt-attack signflip <empty.rec
	[[ "$stderr" == *"stdin: empty input"* ]]
	py "out(rec(G[0], origin=0), rec(G[1][:5], name='m:9', origin=1))" >shape.rec
	run -65 --separate-stderr spirt-attack signflip shape.rec
	[[ "$stderr" == *"shapes differ"* ]]
	cat all.rec all.rec >dup.rec
	run -65 --separate-stderr spirt-attack signflip dup.rec
	[[ "$stderr" == *"origin 0 again"* ]]
	run -66 spirt-attack signflip no-such.rec
	mkdir dir
	run -73 spirt-attack -o dir signflip all.rec
	run -74 sh -c 'spirt-attack signflip all.rec >/dev/full'
	# -o publishes the file whole
	spirt-attack -o out.rec signflip all.rec
	spirt-attack signflip all.rec | cmp - out.rec
}

@test "spirt-grad --label-flip: the gradient of labels K-1-y, as numpy" {
	# softmax regression on the committed fixture's 8 samples (5 classes)
	py "
p = np.load('$DATA/grad/softmax.params.npy')
x = np.load('$DATA/grad/softmax.x.npy'); y = np.load('$DATA/grad/softmax.y.npy')
out(st.encode(p.astype(np.float32), name='softmax:20:5', step=0))
" >m.spt
	py "
x = np.load('$DATA/grad/softmax.x.npy'); y = np.load('$DATA/grad/softmax.y.npy')
out(st.encode(x.astype(np.float32)), st.encode(y.astype(np.int32)))" >d.spt
	spirt-grad -p m.spt -D d.spt -b 8 --label-flip -o flip.rec
	spirt-grad -p m.spt -D d.spt -b 8 -o honest.rec
	py "
p = np.load('$DATA/grad/softmax.params.npy').astype(np.float64)
x = np.load('$DATA/grad/softmax.x.npy').astype(np.float64)
y = np.load('$DATA/grad/softmax.y.npy')
W, b = p[:100].reshape(5, 20), p[100:]
def grad(lab):
    z = x @ W.T + b; z -= z.max(1, keepdims=True)
    pr = np.exp(z); pr /= pr.sum(1, keepdims=True)
    loss = -np.log(pr[np.arange(8), lab]).mean()
    pr[np.arange(8), lab] -= 1; pr /= 8
    return np.concatenate([(pr.T @ x).ravel(), pr.sum(0)]), loss
want, loss = grad(4 - y)
r = recs('flip.rec')[0]
d = np.abs(r.array - want).max()
assert d < 1e-5, d
assert abs(r.loss - loss) < 1e-5, (r.loss, loss)
h, hl = grad(y)
assert np.abs(recs('honest.rec')[0].array - h).max() < 1e-5
assert np.abs(want - h).max() > 1e-2      # the flip changes something
"
}

@test "spirt-train --byzantine: chosen functions attacked in the store, named in the log" {
	[ -e "$FMNIST/train-images-idx3-ubyte.gz" ] || skip "no Fashion-MNIST"
	run -0 --separate-stderr spirt-train --steps 3 -n 4 -s a.db \
	    --byzantine 1,3:scale:0 -a cclip:1 --bucket 2
	[[ "$stderr" == *"rule cclip:1, buckets of 2, byzantine functions 1,3: scale:0 (evaluation only)"* ]]
	# the last step's gradients are still in the store: 1 and 3 are zero
	run -0 spirt-store -s a.db show grad/2/0 grad/2/1 grad/2/2 grad/2/3
	[ "$(grep -c '^l2=0$' <<<"$output")" -eq 2 ]
	spirt-store -s a.db show grad/2/1 | grep -qx 'l2=0'
	spirt-store -s a.db show grad/2/3 | grep -qx 'l2=0'
	# cold: the same attack, the same model
	spirt-train -q --cold --steps 3 -n 4 -s c.db --byzantine 1,3:scale:0 \
	    -a cclip:1 --bucket 2
	spirt-store -s a.db get model/mlp@3 >a.rec
	spirt-store -s c.db get model/mlp@3 | cmp - a.rec
	# and not the model of an honest run
	spirt-train -q --steps 3 -n 4 -s h.db -a cclip:1 --bucket 2
	! spirt-store -s h.db get model/mlp@3 | cmp -s - a.rec
}

@test "spirt-train --byzantine W:labelflip runs those functions with --label-flip" {
	[ -e "$FMNIST/train-images-idx3-ubyte.gz" ] || skip "no Fashion-MNIST"
	spirt-train -q --steps 2 -n 3 -s l.db --byzantine 2:labelflip
	# (the warm functions' last gradients, step 1's, are in their slots:
	# the values after a 4096-byte header; a record's before its
	# 16-byte trailer)
	tail -c +4097 l.db/scratch/slot.2 >g2.f32
	tail -c +4097 l.db/scratch/slot.0 >g0.f32
	n=$(stat -c %s g2.f32)
	spirt-grad -s l.db -m mlp -t 1 -w 2 -b 32 -S 1 --label-flip -o - |
		head -c -16 | tail -c "$n" | cmp - g2.f32
	spirt-grad -s l.db -m mlp -t 1 -w 0 -b 32 -S 1 -o - |
		head -c -16 | tail -c "$n" | cmp - g0.f32
	! spirt-grad -s l.db -m mlp -t 1 -w 2 -b 32 -S 1 -o - |
		head -c -16 | tail -c "$n" | cmp -s - g2.f32
	# cold: the same
	spirt-train -q --cold --steps 2 -n 3 -s lc.db --byzantine 2:labelflip
	spirt-store -s lc.db get model/mlp@2 >c.rec
	spirt-store -s l.db get model/mlp@2 | cmp - c.rec
}

@test "spirt-train --byzantine and --bucket: bad values are 64 before any work" {
	for b in 1 x:signflip 1,:signflip ,1:signflip 1,,2:signflip 4:signflip \
	    1,1:signflip '1:' 1:bogus 1:scale 1:gauss:-1; do
		run -64 --separate-stderr spirt-train --steps 1 -s b.db --byzantine "$b"
		[[ "$stderr" == "spirt-train: "* ]] || fail "$b: $stderr"
		[ ! -e b.db ] || fail "$b: store made"
	done
	run -64 --separate-stderr spirt-train -s b.db --byzantine 1,1:ipm
	[[ "$stderr" == *"function 1 twice"* ]]
	run -64 --separate-stderr spirt-train -s b.db --byzantine 1:nope
	[[ "$stderr" == *'unknown or malformed attack "nope"'* ]]
	run -64 spirt-train -s b.db --bucket 0
	run -64 spirt-train -s b.db --bucket x
	run -64 --separate-stderr spirt-train -s b.db --bucket 2 -a krum:1
	[[ "$stderr" == *"2 buckets of 2 from 4 inputs with --byzantine 1: Krum needs W > 2f+2 = 4"* ]]
	run -64 spirt-train -s b.db -a cclip:x
	run -64 spirt-train -s b.db -a cclip:0
	run -64 spirt-train -s b.db -a cclip:1:0
	[ ! -e b.db ]
}
