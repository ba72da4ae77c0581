#!/usr/bin/env bats
# 30-agg: spirt-agg rules, inputs, outputs, exclusions and exit codes

load helper

# Python prelude: rec() makes a gradient record, get() reads one back
PRELUDE="$PYREC"'
def rec(a, name="m:8", step=3, origin=None, samples=8, loss=1.0,
        revision=None):
    return st.encode(np.asarray(a, dtype=np.float32), name=name, step=step,
                     origin=origin, samples=samples, loss=loss,
                     revision=revision)
get = load
G = np.random.default_rng(7).standard_normal((16, 8)).astype(np.float32)
'

py() {
	"$PYTHON" -c "$PRELUDE$1"
}

# grads W: W records g<w>.rec (origin w, samples 8+w) and all.rec
grads() {
	py "
for w in range($1):
    open('g%d.rec' % w, 'wb').write(rec(G[w], origin=w, samples=8 + w,
                                        loss=w))
"
	cat $(seq -f 'g%g.rec' 0 $(($1 - 1))) >all.rec
}

# store W: grad/3/<w> in the store
store() {
	grads "$1"
	for w in $(seq 0 $(($1 - 1))); do
		spirt-store put "grad/3/$w" "g$w.rec" || return 1
	done
}

# check RESULT-FILE PYTHON-EXPR-OF-G: values within 1e-5
check() {
	py "
r = get('$1'); want = np.asarray($2, dtype=np.float64)
d = np.abs(r['a'] - want).max()
assert d <= 1e-5 * max(1, np.abs(want).max()), 'maxdiff %g' % d
"
}

@test "mean of a record stream on stdin" {
	grads 4
	run -0 --separate-stderr spirt-agg -o out.rec <all.rec
	check out.rec 'G[:4].mean(0)'
	py "r = get('out.rec'); assert r['count'] == 4 and r['step'] == 3
assert r['samples'] == 8 + 9 + 10 + 11 and r['loss'] == 1.5
assert r['name'] == 'm:8'"
}

@test "each rule agrees with numpy" {
	grads 8
	spirt-agg -r mean all.rec >mean.rec
	check mean.rec 'G[:8].mean(0)'
	spirt-agg -r wmean all.rec >wmean.rec
	check wmean.rec '(G[:8] * np.arange(8, 16)[:, None]).sum(0) / np.arange(8, 16).sum()'
	spirt-agg --trim 0.25 all.rec >trim.rec
	check trim.rec 'np.sort(G[:8], 0)[2:6].mean(0)'
	spirt-agg -r median all.rec >median.rec
	check median.rec 'np.median(G[:8], 0)'
	spirt-agg -r norm all.rec >norm.rec
	check norm.rec 'G[:8].mean(0)'
	spirt-agg -r krum --byzantine 2 all.rec >krum.rec
	py "
r = get('krum.rec')['a']
assert any((r == G[w]).all() for w in range(8))"
	run -64 spirt-agg -r mkrum --byzantine 2 --select 8 all.rec
	spirt-agg -r mkrum --byzantine 1 --select 7 all.rec >mkrum.rec
	py "assert get('mkrum.rec')['count'] == 7"
}

@test "two files, records in any order: bit-identical output" {
	grads 6
	cat g3.rec g1.rec g5.rec >a.rec
	cat g0.rec g4.rec g2.rec >b.rec
	spirt-agg --trim 0.2 all.rec >one.rec
	spirt-agg --trim 0.2 b.rec a.rec >two.rec
	cat g5.rec g4.rec g3.rec g2.rec g1.rec g0.rec |
		spirt-agg --trim 0.2 - >three.rec
	cmp one.rec two.rec
	cmp one.rec three.rec
	for r in mean median norm; do
		spirt-agg -r $r all.rec >x.rec
		spirt-agg -r $r b.rec a.rec >y.rec
		cmp x.rec y.rec
	done
}

@test "-t aggregates grad/<t>/* into agg/<t> and agg/<t>/excluded" {
	store 4
	run -0 --separate-stderr spirt-agg -t 3 -r median
	[ -z "$output" ]
	spirt-store get agg/3 >agg.rec
	check agg.rec 'np.median(G[:4], 0)'
	run -0 spirt-store show agg/3/excluded
	assert_line 'dtype=i64'
	assert_line 'shape=0x2'
	# an existing aggregate is kept unless -R
	before=$(store_digest spirt.db)
	run -73 --separate-stderr spirt-agg -t 3
	[[ "$stderr" == *"agg/3 exists"* ]]
	[ "$(store_digest spirt.db)" = "$before" ]
	run -0 spirt-agg -t 3 -R
	spirt-store get agg/3 >agg.rec
	check agg.rec 'G[:4].mean(0)'
}

@test "-P removes the spent steps before t-1, and only those" {
	store 2
	# steps 0..2 aggregated earlier, a stray key that is not a step's
	for t in 0 1 2; do
		py "out(rec(G[0], step=$t, origin=0))" >s.rec
		spirt-store put "grad/$t/0" s.rec
		spirt-agg -q -t "$t"
	done
	spirt-store put grad/x s.rec
	spirt-store put grad/1x s.rec
	spirt-store put grad/10/0 s.rec
	run -0 spirt-agg -q -P -t 3
	run -0 spirt-store ls
	refute_line --partial 'grad/0/'
	refute_line --partial 'grad/1/'
	refute_line --regexp '^agg/0'
	refute_line --regexp '^agg/1'
	assert_line --partial 'grad/2/0'
	assert_line --partial 'agg/2/excluded'
	assert_line --partial 'grad/3/1'
	assert_line --regexp '^agg/3	'
	assert_line --partial 'grad/x'
	assert_line --partial 'grad/1x'
	assert_line --partial 'grad/10/0'
	# nothing to prune when nothing goes to the store
	run -64 --separate-stderr spirt-agg -P -t 3 -o x.rec
	[[ "$stderr" == "spirt-agg: -P prunes the store"* ]]
	run -64 spirt-agg -P s.rec
	# in warm mode too, at each step
	run -66 --separate-stderr spirt-agg -q -P -R -i <<<4
	[ "$output" = 'step=4 error=66' ]     # no gradients yet
	py "out(rec(G[0], step=4, origin=0))" >s4.rec
	spirt-store put grad/4/0 s4.rec
	run -0 spirt-agg -q -P -i <<<4
	run -0 spirt-store ls grad/2/
	assert_output ''
}

@test "-k aggregates named keys; -o sends the result out, not to the store" {
	store 4
	run -0 spirt-agg -k grad/3/0 -k grad/3/2 --verify
	spirt-store get agg/3 >agg.rec
	check agg.rec '(G[0] + G[2]) / 2'
	before=$(store_digest spirt.db)
	run -0 spirt-agg -t 3 -R -o out.rec
	[ "$(store_digest spirt.db)" = "$before" ]
	check out.rec 'G[:4].mean(0)'
	spirt-agg -t 3 -o - >out2.rec
	cmp out.rec out2.rec
	run -64 --separate-stderr spirt-agg -k grad/3/0 all.rec
	[[ "$stderr" == *"not both"* ]]
}

@test "NaN and Inf inputs are excluded, named and recorded" {
	store 4
	py "
a = G[1].copy(); a[5] = np.nan
open('nan.rec', 'wb').write(rec(a, origin=9))
b = G[2].copy(); b[0] = np.inf
open('inf.rec', 'wb').write(rec(b, origin=7))"
	spirt-store put grad/3/9 nan.rec
	spirt-store put grad/3/7 inf.rec
	run -0 --separate-stderr spirt-agg -t 3 --trim 0.25
	[[ "$stderr" == *"grad/3/9: excluded: NaN or Inf"* ]]
	[[ "$stderr" == *"grad/3/7: excluded: NaN or Inf"* ]]
	spirt-store get agg/3 >agg.rec
	check agg.rec 'np.sort(G[:4], 0)[1:3].mean(0)'
	py "assert get('agg.rec')['count'] == 4"
	spirt-store get agg/3/excluded >ex.rec
	py "assert get('ex.rec')['a'].tolist() == [[7, 1], [9, 1]]"
	# -q keeps quiet; -v reports
	cat g0.rec nan.rec g1.rec >s.rec
	run -0 --separate-stderr spirt-agg -q -o /dev/null s.rec
	[ -z "$stderr" ]
	run -0 --separate-stderr spirt-agg -v -o /dev/null s.rec
	[[ "$stderr" == *"mean of 3 inputs (2 used)"* ]]
	[[ "$stderr" == *"s.rec: record 1: excluded"* ]]
}

@test "wmean bounds each sample count by the batch (--batch, SPIRT_BATCH, 64) or --max-samples" {
	unset SPIRT_BATCH
	# four honest gradients of 64 samples, two liars claiming 10^6 each
	# with the opposite direction: trusted, they would reverse the result
	py "
h = [rec(G[0] + 0.1 * G[w], origin=w, samples=64) for w in range(4)]
l = [rec(-G[0], origin=4 + w, samples=10**6) for w in range(2)]
out(*h, *l)" >lie.rec
	run -0 --separate-stderr spirt-agg -r wmean -o out.rec lie.rec
	# counted as 64 each: the plain mean of the six, as numpy says
	check out.rec '(np.stack([G[0] + 0.1 * G[w] for w in range(4)]).sum(0) - 2 * G[0]) / 6'
	py "r = get('out.rec'); assert r['samples'] == 6 * 64, r['samples']
assert (r['a'] * G[0]).sum() > 0    # not reversed"
	[[ "$stderr" == *"lie.rec: record 4: 1000000 samples claimed, above the batch, 64: counted as 64"* ]]
	[[ "$stderr" == *"lie.rec: record 5: 1000000 samples"* ]]
	run -0 --separate-stderr spirt-agg -q -r wmean -o out.rec lie.rec
	[ -z "$stderr" ]
	# a smaller bound: the honest counts too are cut to it
	run -0 --separate-stderr spirt-agg -r wmean --max-samples 8 \
	    -o out8.rec lie.rec
	[[ "$stderr" == *"lie.rec: record 0: 64 samples claimed, above --max-samples 8: counted as 8"* ]]
	run -0 spirt-agg -q -r wmean --batch 8 -o b8.rec lie.rec
	cmp b8.rec out8.rec
	check out8.rec '(np.stack([G[0] + 0.1 * G[w] for w in range(4)]).sum(0) - 2 * G[0]) / 6'
	py "assert get('out8.rec')['samples'] == 6 * 8"
	# SPIRT_BATCH is the default bound; the option wins
	py "
out(rec(G[0], origin=0, samples=100), rec(G[1], origin=1, samples=300))" >two.rec
	SPIRT_BATCH=200 spirt-agg -q -r wmean -o b.rec two.rec
	check b.rec '(100 * G[0] + 200 * G[1]) / 300'
	SPIRT_BATCH=200 spirt-agg -q -r wmean --max-samples 1000 -o c.rec two.rec
	check c.rec '(100 * G[0] + 300 * G[1]) / 400'
	# the store path bounds the same way
	for w in 0 1 2 3 4 5; do
		py "
import io
rs = list(st.read_records(open('lie.rec', 'rb')))
out(rec(rs[$w].array, origin=$w, samples=rs[$w].samples))" >s$w.rec
		spirt-store put grad/3/$w s$w.rec
	done
	spirt-agg -q -t 3 -r wmean
	spirt-store get agg/3 >st.rec
	cmp st.rec out.rec
	run -64 spirt-agg --max-samples 0 lie.rec
	run -64 spirt-agg --max-samples x lie.rec
	run -64 spirt-agg --max-samples 1048577 lie.rec
	SPIRT_BATCH=x run -64 spirt-agg lie.rec
	run -64 spirt-agg --batch 0 lie.rec
	run -64 spirt-agg --batch 1048577 lie.rec
}

@test "the bound follows the assignment in force: a reassigned step's gradients count whole, a liar its minibatch" {
	# 80 samples in 4 shards of 20, batch 4: 5 steps an epoch.  Step 0
	# with all four; function 2 dies at step 1: its 16 samples left go
	# to the others, whose lists (21 or 22 over the 4 steps left) make
	# minibatches of 5 or 6, more than the batch
	for i in $(seq 0 79); do echo "$((i % 2)),$i"; done >t.csv
	spirt-shard -q -n 4 t.csv
	spirt-init -q -m m softmax:1:2
	for w in 0 1 2 3; do spirt-grad -q -m m -t 0 -w $w -b 4; done
	spirt-agg -q -t 0 --batch 4
	spirt-update -q -m m -t 0 -r 0.1
	spirt-shard -q -t 1 -b 4 --live 0,1,3
	for w in 0 1 3; do spirt-grad -q -m m -t 1 -w $w -b 4; done
	for w in 0 1 3; do spirt-store get grad/1/$w >g$w.rec; done
	py "assert [get('g%d.rec' % w)['samples'] for w in (0, 1, 3)] == [5] * 3"
	# honest work weighs whole: no note, the aggregate counts 15
	run -0 --separate-stderr spirt-agg -t 1 -r wmean --batch 4
	[ -z "$stderr" ]
	spirt-store get agg/1 >a.rec
	py "assert get('a.rec')['samples'] == 15, get('a.rec')['samples']"
	# SPIRT_BATCH says the batch as well, and in warm mode
	SPIRT_BATCH=4 run -0 --separate-stderr spirt-agg -R -t 1 -r wmean
	[ -z "$stderr" ]
	SPIRT_BATCH=4 run -0 --separate-stderr sh -c \
	    'echo 1 | spirt-agg -R -i -r wmean'
	[ -z "$stderr" ]
	spirt-store get agg/1 | cmp - a.rec
	# --max-samples 4 still cuts them to it, each named
	run -0 --separate-stderr spirt-agg -R -t 1 -r wmean --max-samples 4
	[[ "$stderr" == *"grad/1/0: 5 samples claimed, above --max-samples 4: counted as 4"* ]]
	spirt-store get agg/1 >m.rec
	py "assert get('m.rec')['samples'] == 12"
	# function 3 lies about its count: held to its minibatch, 5, and
	# named; function 1 claims fewer: its own count stands
	py "
g = [get('g%d.rec' % w) for w in (0, 1, 3)]
out(st.encode(g[1]['a'], name='softmax:1:2', step=1, origin=1, samples=2,
              loss=1.0, revision=1))" >l1.rec
	py "
g = get('g0.rec')
out(st.encode(-100 * g['a'], name='softmax:1:2', step=1, origin=3,
              samples=10**6, loss=1.0, revision=1))" >l3.rec
	spirt-store put grad/1/1 l1.rec
	spirt-store put grad/1/3 l3.rec
	run -0 --separate-stderr spirt-agg -R -t 1 -r wmean --batch 4
	assert_equal "$stderr" 'spirt-agg: grad/1/3: 1000000 samples claimed, above the 5 its assignment gives worker 3 at step 1: counted as 5'
	spirt-store get agg/1 >l.rec
	py "
r = get('l.rec')
w = [get(f)['a'] for f in ('g0.rec', 'l1.rec', 'l3.rec')]
assert r['samples'] == 12, r['samples']
assert np.allclose(r['a'], (5 * w[0] + 2 * w[1] + 5 * w[2]) / 12, atol=1e-6)"
}

@test "too few finite inputs left is a data error" {
	py "
a = G[0].copy(); a[0] = np.nan
out(rec(a, origin=0), rec(a, origin=1))" >nan.rec
	run -65 --separate-stderr spirt-agg nan.rec
	[[ "$stderr" == *"too few usable inputs"* ]]
	[ ! -s "$output" ]
	# Krum: fewer than 2f+3 finite inputs, said so
	py "
a = G[0].copy(); a[0] = np.nan
out(*[rec(G[w], origin=w) for w in range(4)], rec(a, origin=4))" >k.rec
	run -65 --separate-stderr spirt-agg -r krum --byzantine 1 k.rec
	[[ "$stderr" == *"too few usable inputs for rule krum: Krum needs more than 2f+2 = 4 finite inputs"* ]]
	spirt-agg -r krum --byzantine 0 k.rec >/dev/null
}

@test "inputs disagreeing on shape, step or model: named, nothing written" {
	store 3
	before=$(store_digest spirt.db)
	py "out(rec(np.zeros(5), origin=5))" >shape.rec
	spirt-store put grad/3/5 shape.rec
	before=$(store_digest spirt.db)
	run -65 --separate-stderr spirt-agg -t 3
	[[ "$stderr" == *"grad/3/5: 5 values, grad/3/0 has 8: shapes differ"* ]]
	[ "$(store_digest spirt.db)" = "$before" ]
	spirt-store rm grad/3/5

	py "out(rec(G[5], origin=5, step=4))" >step.rec
	cat g0.rec step.rec >s.rec
	run -65 --separate-stderr spirt-agg s.rec
	[[ "$stderr" == *"s.rec: record 1: step 4, not 3"* ]]
	[ -z "$output" ]
	# with -t, an earlier step is a straggler, not applied; a later one
	# is a mistake
	run -66 --separate-stderr spirt-agg -t 4 g0.rec
	[[ "$stderr" == *"g0.rec: record 0: not applied: step 3, a past step (not 4)"* ]]
	[[ "$stderr" == *"no gradients for step 4 left: 1 of a past step, 0 of another assignment revision"* ]]
	run -65 --separate-stderr spirt-agg -t 2 g0.rec
	[[ "$stderr" == *"g0.rec: record 0: step 3, not 2"* ]]

	py "out(rec(G[5], origin=5, name='m:other'))" >model.rec
	cat g1.rec model.rec >m.rec
	run -65 --separate-stderr spirt-agg m.rec
	[[ "$stderr" == *'m.rec: record 1: model "m:other", m.rec: record 0 has "m:8"'* ]]

	cat g1.rec g1.rec >dup.rec
	run -65 --separate-stderr spirt-agg dup.rec
	[[ "$stderr" == *"dup.rec: record 1: origin 1 again"* ]]

	# a record in another worker's slot: grad/3/5 of origin 1, in the
	# store and by its key (spirt-function(7)); nothing written
	spirt-store put grad/3/5 g1.rec
	spirt-store rm grad/3/1
	before=$(store_digest spirt.db)
	run -65 --separate-stderr spirt-agg -t 3
	[ "$stderr" = "spirt-agg: grad/3/5: origin 1, not the key's worker 5" ]
	run -65 --separate-stderr spirt-agg -k grad/3/0 -k grad/3/5
	[ "$stderr" = "spirt-agg: grad/3/5: origin 1, not the key's worker 5" ]
	[ "$(store_digest spirt.db)" = "$before" ]
	spirt-store rm grad/3/5

	py "out(rec(G[0], samples=0, origin=1), rec(G[1], samples=0, origin=2))" >ns.rec
	run -65 spirt-agg -r wmean ns.rec
}

@test "truncated or corrupt records on stdin are data errors" {
	grads 3
	head -c 100 g2.rec >part.rec
	cat g0.rec g1.rec part.rec >t.rec
	run -65 --separate-stderr spirt-agg <t.rec
	[[ "$stderr" == *"stdin: record 2: truncated record"* ]]
	[ -z "$output" ]
	: >empty.rec
	run -65 --separate-stderr spirt-agg <empty.rec
	[[ "$stderr" == *"stdin: empty input"* ]]
	cp g0.rec bad.rec
	printf 'XXXX' | dd of=bad.rec bs=1 seek=80 conv=notrunc 2>/dev/null
	run -65 --separate-stderr spirt-agg bad.rec
	[[ "$stderr" == *"bad.rec: record 0:"*"checksum"* ]]
}

@test "rule parameters that make no sense for W are usage errors" {
	grads 4
	run -64 --separate-stderr spirt-agg --trim 0.1 all.rec
	[[ "$stderr" == *"rule trim: --trim 0.1 of 4 inputs must cut at least one per side"* ]]
	run -64 spirt-agg --trim 0.5 all.rec
	# Krum states its condition, W > 2f+2
	run -64 --separate-stderr spirt-agg -r krum --byzantine 1 all.rec
	[ "$stderr" = 'spirt-agg: rule krum: 4 inputs with --byzantine 1: Krum needs W > 2f+2 = 4' ]
	run -64 --separate-stderr spirt-agg -r mkrum --byzantine 1 all.rec
	[[ "$stderr" == *"rule mkrum: 4 inputs with --byzantine 1: Krum needs W > 2f+2 = 4"* ]]
	run -64 --separate-stderr spirt-agg -r mkrum --select 9 all.rec
	[[ "$stderr" == *"rule mkrum: --select 9 of 4 inputs with --byzantine 0: needs m <= W - f = 4"* ]]
	spirt-agg -r krum --byzantine 0 all.rec >/dev/null
	# the same checks as a dry run, for W inputs: nothing read
	run -0 --separate-stderr spirt-agg -r krum --byzantine 1 --check-rule 5 </dev/full
	[ -z "$output" ] && [ -z "$stderr" ]
	run -64 --separate-stderr spirt-agg -r krum --byzantine 1 --check-rule 4
	[ "$stderr" = 'spirt-agg: rule krum: 4 inputs with --byzantine 1: Krum needs W > 2f+2 = 4' ]
	run -0 spirt-agg --trim 0.25 --check-rule 4
	run -64 spirt-agg --trim 0.2 --check-rule 4
	run -64 spirt-agg --trim 0.6 --check-rule 8
	run -64 spirt-agg -r mkrum --byzantine 1 --select 3 --check-rule 4
	run -0 spirt-agg -r mkrum --byzantine 1 --select 3 --check-rule 5
	run -64 spirt-agg -r mkrum --byzantine 1 --select 5 --check-rule 5
	run -64 spirt-agg --check-rule 0
	run -64 spirt-agg --check-rule 257
	run -64 spirt-agg --check-rule 4 all.rec
	run -64 spirt-agg --check-rule 4 -t 3
	run -64 spirt-agg --check-rule 4 -i
	run -64 --separate-stderr spirt-agg -r bogus all.rec
	[[ "$stderr" == *'unknown rule "bogus"'* ]]
	run -64 spirt-agg --mad 0 all.rec
	run -64 spirt-agg -t x
	# SPIRT_AGG_RULE is the default rule
	SPIRT_AGG_RULE=median spirt-agg all.rec >med.rec
	check med.rec 'np.median(G[:4], 0)'
	SPIRT_AGG_RULE=bogus run -64 spirt-agg all.rec
}

@test "missing store, step or file: exit 66" {
	run -66 --separate-stderr spirt-agg -t 3 -s nowhere
	[[ "$stderr" == *"nowhere"* || "$stderr" == *"open store"* ]]
	store 2
	run -66 --separate-stderr spirt-agg -t 9
	[[ "$stderr" == *"no gradients for step 9"* ]]
	run -66 --separate-stderr spirt-agg -k grad/3/7
	[[ "$stderr" == *"grad/3/7: no such key"* ]]
	run -66 --separate-stderr spirt-agg no-such.rec
	[[ "$stderr" == *"no-such.rec"* ]]
}

@test "output errors: exit 73 and 74" {
	grads 2
	mkdir dir
	run -73 --separate-stderr spirt-agg -o dir all.rec
	[[ "$stderr" == *"dir: Is a directory"* ]]
	run -73 --separate-stderr spirt-agg -o no-dir/x.rec all.rec
	[ "$stderr" = 'spirt-agg: no-dir/x.rec: No such file or directory' ]
	run -74 sh -c 'spirt-agg all.rec >/dev/full'
}

@test "pipe: records | spirt-agg --trim 0.25 | spirt-update" {
	store 4
	py "out(rec(np.ones(8), step=3))" >model.rec
	spirt-store put model/m@3 model.rec
	for w in 0 1 2 3; do spirt-store get "grad/3/$w"; done |
		spirt-agg --trim 0.25 | spirt-update -m m -r 0.5 -
	spirt-store get model/m@4 >m4.rec
	check m4.rec '1 - 0.5 * np.sort(G[:4], 0)[1:3].mean(0)'
}

@test "pipe: spirt-grad x 4 | spirt-agg --trim 0.25 | spirt-update" {
	command -v spirt-grad >/dev/null || skip "spirt-grad not built"
	awk 'BEGIN { for (i = 0; i < 40; i++)
		printf "%d,%.3f,%.3f,%.3f,%.3f\n", i % 3, (i % 7) / 7,
		    (i % 5) / 5, (i % 3) / 3, (i % 11) / 11 }' >train.csv
	spirt-shard -q -n 4 train.csv
	spirt-init -q -m m mlp:4-5-3
	for w in 0 1 2 3; do spirt-grad -m m -t 0 -w $w -b 8 -o -; done |
		spirt-agg --trim 0.25 | spirt-update -m m -r 0.1 --opt adam -
	run -0 spirt-store show model/m@1 opt/m@1
	assert_line 'name=mlp:4-5-3'
	assert_line 'name=adam'
	# the same pipe again applies nothing
	before=$(store_digest spirt.db)
	for w in 0 1 2 3; do spirt-grad -m m -t 0 -w $w -b 8 -o -; done |
		spirt-agg --trim 0.25 | spirt-update -q -m m --opt adam -
	[ "$(store_digest spirt.db)" = "$before" ]
}

@test "large gradients: in-store and stream results are the same bits" {
	py "
r = np.random.default_rng(5)
for w in range(5):
    open('b%d.rec' % w, 'wb').write(rec(r.standard_normal(6000), origin=w))"
	for w in 4 2 0 3 1; do spirt-store put "grad/3/$w" "b$w.rec"; done
	for r in mean median; do
		spirt-agg -t 3 -R -r $r
		spirt-store get agg/3 >store.rec
		cat b3.rec b0.rec b4.rec b1.rec b2.rec | spirt-agg -r $r >stream.rec
		cmp store.rec stream.rec
	done
	spirt-agg -t 3 -R --trim 0.2
	spirt-store get agg/3 >trim.rec
	py "
a = np.stack([get('b%d.rec' % w)['a'] for w in range(5)])
d = np.abs(get('trim.rec')['a'] - np.sort(a, 0)[1:4].mean(0)).max()
assert d < 1e-6, d"
}

@test "warm mode (-i): one in-store run per step line, one answer each" {
	store 4
	py "
for w in range(4):
    open('s5_%d.rec' % w, 'wb').write(rec(G[8 + w], step=5, origin=w,
                                          loss=0.25 * w))"
	for w in 0 1 2 3; do spirt-store put "grad/5/$w" "s5_$w.rec"; done
	cp -R spirt.db cold.db
	long=$(printf '%0300d' 0)
	run -66 --separate-stderr spirt-agg -i --trim 0.25 <<-EOF2
		3
		x
		7
		$long
		5
	EOF2
	[ "${#lines[@]}" -eq 5 ]
	assert_line --index 0 'step=3 count=4 loss=1.5'
	assert_line --index 1 'error=64'
	assert_line --index 2 'step=7 error=66'
	assert_line --index 3 'error=64'
	assert_line --index 4 'step=5 count=4 loss=0.375'
	[[ "$stderr" == *'stdin:2: "x": expected a step'* ]]
	[[ "$stderr" == *"no gradients for step 7"* ]]
	# the same bytes as cold runs with -t
	spirt-agg -s cold.db -t 3 --trim 0.25
	spirt-agg -s cold.db -t 5 --trim 0.25
	for k in agg/3 agg/3/excluded agg/5 agg/5/excluded; do
		spirt-store get "$k" >warm.rec
		spirt-store -s cold.db get "$k" >cold.rec
		cmp warm.rec cold.rec
	done
	# a step already aggregated: 73 unless -R; all fine: exit 0
	run -73 --separate-stderr spirt-agg -i <<<3
	assert_output 'step=3 error=73'
	run -0 --separate-stderr spirt-agg -i -R -r median <<<$'3\n5'
	assert_line --index 0 'step=3 count=4 loss=1.5'
	assert_line --index 1 'step=5 count=4 loss=0.375'
	spirt-store get agg/3 >agg.rec
	check agg.rec 'np.median(G[:4], 0)'
	run -0 spirt-agg -i </dev/null
	assert_output ''
	# warm writes to the store only
	grads 2
	run -64 spirt-agg -i all.rec
	run -64 spirt-agg -i -o out.rec
}

@test "--publish ID: the aggregate as peer ID's published xagg/<t>/ID, never replaced" {
	store 4
	cp -R spirt.db plain.db
	run -0 --separate-stderr spirt-agg -t 3 --trim 0.25 --publish p1
	assert_output ''
	# the bytes agg/3 would have had, under the peer's key; the record of
	# what was left out where it always is
	spirt-agg -s plain.db -t 3 --trim 0.25
	cmp <(spirt-store get xagg/3/p1) <(spirt-store -s plain.db get agg/3)
	cmp <(spirt-store get agg/3/excluded) \
	    <(spirt-store -s plain.db get agg/3/excluded)
	run -66 spirt-store get agg/3
	# a peer publishes one aggregate a step: -R or not, another rule or
	# not, the one there stands and nothing is written (exit 0, a note)
	before=$(store_digest spirt.db)
	run -0 --separate-stderr spirt-agg -R -t 3 -r median --publish p1
	[[ "$stderr" == *"xagg/3/p1: published already, it stands (nothing written)"* ]]
	[ "$(store_digest spirt.db)" = "$before" ]
	# warm: the answer is the published one's
	run -0 --separate-stderr spirt-agg -i -q -R -r median --publish p1 <<<3
	assert_output 'step=3 count=4 loss=1.5'
	[ "$(store_digest spirt.db)" = "$before" ]
	# another peer id is another key
	spirt-agg -t 3 -r median --publish p2
	spirt-store get xagg/3/p2 >m.rec
	check m.rec 'np.median(G[:4], 0)'
	# cclip's centre is the peer's aggregate of t-1, xagg/<t-1>/ID
	py "
for w in range(4):
    open('s4_%d.rec' % w, 'wb').write(rec(G[8 + w], step=4, origin=w))"
	for w in 0 1 2 3; do spirt-store put "grad/4/$w" "s4_$w.rec"; done
	run -0 --separate-stderr spirt-agg -v -t 4 -r cclip --tau 1 --publish p1
	[[ "$stderr" == *"cclip: centre xagg/3/p1, tau 1, 1 iterations"* ]]
	# usage: not a peer id; not with -o or files
	run -64 --separate-stderr spirt-agg -t 3 --publish 'a b'
	[[ "$stderr" == *'--publish: "a b" is not a peer id'* ]]
	run -64 --separate-stderr spirt-agg -t 3 -o x.rec --publish p1
	[[ "$stderr" == *"--publish writes xagg/<step>/<id> in the store"* ]]
	run -64 spirt-agg --publish p1 all.rec
}

# byz: B.rec, the ten gradients of tests/data/byz/G.npy (step 3, origin w)
# and c.rec, its centre (contrib/python/make_byz_fixtures.py made them)
byz() {
	py "
G = np.load('$DATA/byz/G.npy')
out(*[rec(G[w], name='m:37', origin=w) for w in range(10)])" >B.rec
	py "out(rec(np.load('$DATA/byz/c.npy'), name='m:37', step=2))" >c.rec
}

# fixture RESULT NAME: RESULT's values are tests/data/byz/NAME.npy's
fixture() {
	check "$1" "np.load('$DATA/byz/$2.npy')"
}

@test "cclip agrees with the NumPy reference (centre 0, or --center)" {
	byz
	spirt-agg -r cclip --tau 2 B.rec >cc.rec
	fixture cc.rec cclip_t2
	py "assert get('cc.rec')['count'] == 10"
	spirt-agg -r cclip --tau 0.5 --iters 3 --center c.rec B.rec >cc3.rec
	fixture cc3.rec cclip_t05_l3_c
	# order independent, bit for bit
	py "
import io
rs = list(st.read_records(open('B.rec', 'rb')))[::-1]
out(*[rec(r.array, name='m:37', origin=r.origin) for r in rs])" >R.rec
	spirt-agg -r cclip --tau 0.5 --iters 3 --center c.rec R.rec | cmp - cc3.rec
	# a large tau clips nothing: the mean
	spirt-agg -r cclip --tau 1e9 B.rec >big.rec
	check big.rec "np.load('$DATA/byz/G.npy').astype(np.float64).mean(0)"
}

@test "cclip in the store starts from agg/<t-1>, else 0" {
	byz
	for w in $(seq 0 9); do
		py "out(rec(np.load('$DATA/byz/G.npy')[$w], name='m:37', origin=$w))" >s.rec
		spirt-store put "grad/3/$w" s.rec
	done
	run -0 --separate-stderr spirt-agg -v -t 3 -r cclip --tau 2
	[[ "$stderr" == *"cclip: centre zero, tau 2, 1 iterations"* ]]
	spirt-store get agg/3 >a.rec
	fixture a.rec cclip_t2
	spirt-store put agg/2 c.rec
	run -0 --separate-stderr spirt-agg -v -R -t 3 -r cclip --tau 0.5 --iters 3
	[[ "$stderr" == *"cclip: centre agg/2, tau 0.5, 3 iterations"* ]]
	spirt-store get agg/3 >a.rec
	fixture a.rec cclip_t05_l3_c
	# warm: the same, step by step
	run -0 spirt-agg -i -R -r cclip --tau 0.5 --iters 3 <<<3
	spirt-store get agg/3 | cmp - a.rec
	# --center wins over agg/<t-1>
	spirt-agg -R -t 3 -r cclip --tau 2 --center /dev/null 2>/dev/null && false
	py "out(rec(np.zeros(37), name='m:37'))" >zero.rec
	spirt-agg -R -t 3 -r cclip --tau 2 --center zero.rec
	spirt-store get agg/3 >z.rec
	fixture z.rec cclip_t2
	# an agg/<t-1> of another shape cannot be the centre: 65, nothing written
	py "out(rec(np.zeros(5), name='m:37', step=2))" >bad.rec
	spirt-store put agg/2 bad.rec
	before=$(store_digest spirt.db)
	run -65 --separate-stderr spirt-agg -R -t 3 -r cclip
	[[ "$stderr" == *"agg/2: 5 values of f32, grad/3/0 has 37 f32: cannot be cclip's centre"* ]]
	[ "$(store_digest spirt.db)" = "$before" ]
}

@test "tau auto, and scclip centred on its own input, agree with the NumPy reference" {
	byz
	spirt-agg -r cclip --tau auto --byzantine 1 --center c.rec B.rec >ca.rec
	fixture ca.rec cclip_auto1
	py "out(rec(np.load('$DATA/byz/G.npy')[2], name='m:37'))" >own.rec
	spirt-agg -r scclip --tau 2 --center own.rec B.rec >sc.rec
	fixture sc.rec scclip_own2_t2
	spirt-agg -r scclip --tau auto --byzantine 1 --center own.rec B.rec >sa.rec
	fixture sa.rec scclip_own2_auto1
	# the outlier (row 7, 50 times the others) is clipped to the second
	# farthest: it moves the result less than the mean moves
	py "
G = np.load('$DATA/byz/G.npy').astype(np.float64)
r = get('sa.rec')['a']
assert np.linalg.norm(r - G[2]) < np.linalg.norm(G.mean(0) - G[2]) / 5"
	# a radius near 0 keeps the peer where it is
	spirt-agg -r scclip --tau 1e-9 --center own.rec B.rec >tiny.rec
	check tiny.rec "np.load('$DATA/byz/G.npy')[2]"
	# verbose says which radius
	run -0 --separate-stderr spirt-agg -v -r scclip --tau auto --byzantine 1 --center own.rec -o /dev/null B.rec
	[[ "$stderr" == *"scclip: centre own.rec, tau auto (f = 1), 1 iterations"* ]]
	# scclip needs its centre; the precondition is W > 2f, as cclip's
	run -64 --separate-stderr spirt-agg -r scclip B.rec
	[[ "$stderr" == *"rule scclip needs its centre: --center file"* ]]
	run -64 --separate-stderr spirt-agg -r scclip --byzantine 5 --center own.rec B.rec
	[[ "$stderr" == *"rule scclip: 10 inputs with --byzantine 5: needs W > 2f = 10"* ]]
	run -0 spirt-agg -r scclip --byzantine 1 --check-rule 4
	run -64 spirt-agg -r scclip --byzantine 2 --check-rule 4
	run -64 spirt-agg -r scclip --tau au --center own.rec B.rec
}

# gm: grad/<t>/<w> of tests/data/byz/GM.npy for steps 0..2, worker 4
# missing at step 1
gm() {
	py "
GM = np.load('$DATA/byz/GM.npy')
for t in range(3):
    for w in range(10):
        if (t, w) != (1, 4):
            open('gm_%d_%d.rec' % (t, w), 'wb').write(rec(GM[t, w],
                name='m:37', step=t, origin=w, loss=t + w))"
	for t in 0 1 2; do
		for w in $(seq 0 9); do
			[ ! -e "gm_${t}_$w.rec" ] ||
				spirt-store put "grad/$t/$w" "gm_${t}_$w.rec"
		done
	done
}

@test "worker momentum: cclip on the workers' momenta, kept in the store, as the reference" {
	gm
	run -0 --separate-stderr spirt-agg -v -t 0 -r cclip --tau 2 --worker-momentum 0.9
	[[ "$stderr" == *"worker momentum 0.9: 10 of 10 started from the gradient"* ]]
	spirt-agg -q -t 1 -r cclip --tau 2 --worker-momentum 0.9
	# worker 4 missed step 1: its momentum starts again at step 2
	run -0 --separate-stderr spirt-agg -v -t 2 -r cclip --tau 2 --worker-momentum 0.9
	[[ "$stderr" == *"worker momentum 0.9: 1 of 10 started from the gradient"* ]]
	[[ "$stderr" == *"cclip: centre agg/1, tau 2, 1 iterations"* ]]
	for t in 0 1 2; do
		spirt-store get agg/$t >a$t.rec
		check a$t.rec "np.load('$DATA/byz/mom_cclip_t2.npy')[$t]"
	done
	run -66 spirt-store get mom/1/4
	for w in $(seq 0 9); do
		spirt-store get mom/2/$w >m$w.rec
		check m$w.rec "np.load('$DATA/byz/mom_step2.npy')[$w]"
		py "r = st.read_record(open('m$w.rec', 'rb'))
assert r.step == 2 and r.origin == $w and r.name == 'm:37', r"
	done
	# made once per step: a rerun writes the same bytes; without -R it is
	# refused and changes nothing
	a=$(spirt-store get agg/2 | md5sum) m=$(spirt-store get mom/2/3 | md5sum)
	spirt-agg -q -R -t 2 -r cclip --tau 2 --worker-momentum 0.9
	[ "$(spirt-store get agg/2 | md5sum)" = "$a" ]
	[ "$(spirt-store get mom/2/3 | md5sum)" = "$m" ]
	before=$(store_digest spirt.db)
	run -73 spirt-agg -q -t 2 -r cclip --tau 2 --worker-momentum 0.9
	[ "$(store_digest spirt.db)" = "$before" ]
	# warm, the same
	run -0 spirt-agg -i -R -q -r cclip --tau 2 --worker-momentum 0.9 <<<2
	[ "$(spirt-store get agg/2 | md5sum)" = "$a" ]
	# -P: the momenta of spent steps go with their gradients
	spirt-agg -q -R -P -t 2 -r cclip --tau 2 --worker-momentum 0.9
	run -66 spirt-store get mom/0/0
	spirt-store get mom/1/0 >/dev/null
	# the momentum goes in front of any rule: the mean of the momenta
	spirt-agg -q -R -t 2 --worker-momentum 0.9
	spirt-store get agg/2 >mean.rec
	check mean.rec "np.load('$DATA/byz/mom_step2.npy').mean(0)"
}

@test "worker momentum: NaN is not kept, misuse is 64" {
	py "
for w in range(3):
    g = np.full(8, float(w + 1))
    if w == 1: g[3] = np.nan
    open('n%d.rec' % w, 'wb').write(rec(g, origin=w, step=0))"
	for w in 0 1 2; do spirt-store put grad/0/$w n$w.rec; done
	run -0 --separate-stderr spirt-agg -t 0 --worker-momentum 0.5
	[[ "$stderr" == *"grad/0/1: excluded: NaN or Inf values"* ]]
	spirt-store get mom/0/0 >/dev/null
	run -66 spirt-store get mom/0/1
	spirt-store get agg/0 >a.rec
	check a.rec 'np.full(8, 2.0)'
	grads 3
	run -64 spirt-agg --worker-momentum 0.5 all.rec
	run -64 spirt-agg -t 0 -o out.rec --worker-momentum 0.5
	run -64 spirt-agg -k grad/0/0 --worker-momentum 0.5
	run -64 spirt-agg -t 0 -R --worker-momentum 1
	run -64 spirt-agg -t 0 -R --worker-momentum -0.1
}

@test "bucketing (s = 2, 3) in front of mean, median, trim, Krum" {
	byz
	spirt-agg --bucket 2 --seed 5 B.rec >m.rec
	fixture m.rec b2s5_mean
	spirt-agg --bucket 2 --seed 5 -r median B.rec >md.rec
	fixture md.rec b2s5_median
	spirt-agg --bucket 3 --seed 1 --trim 0.25 B.rec >t.rec
	fixture t.rec b3s1_trim25
	spirt-agg -q --bucket 2 -r krum --byzantine 1 -o k.rec B.rec
	fixture k.rec b2s0_krum1
	py "assert get('k.rec')['count'] == 2"
	# another seed, another permutation; the same, the same bits
	spirt-agg --bucket 2 --seed 6 -r median B.rec >md6.rec
	! cmp -s md.rec md6.rec
	spirt-agg --bucket 2 --seed 5 -r median B.rec | cmp - md.rec
	# --bucket 1 is no bucketing
	spirt-agg --bucket 1 -r median B.rec >b1.rec
	check b1.rec "np.median(np.load('$DATA/byz/G.npy'), 0)"
}

@test "bucketing in the store: the step seeds it; excluded buckets name their inputs" {
	byz
	for w in $(seq 0 9); do
		py "out(rec(np.load('$DATA/byz/G.npy')[$w], name='m:37', origin=$w))" >s.rec
		spirt-store put "grad/3/$w" s.rec
	done
	spirt-agg -q -t 3 --bucket 2 -r krum --byzantine 1
	spirt-store get agg/3 >k.rec
	fixture k.rec b2s0_krum1
	spirt-store get agg/3/excluded >ex.rec
	py "
used = np.load('$DATA/byz/b2s0_krum1_used.npy').tolist()
ex = get('ex.rec')['a'].tolist()
assert sorted(o for o, r in ex) == [w for w in range(10) if w not in used], ex
assert all(r == 3 for o, r in ex), ex"
	spirt-agg -R -t 3 --bucket 2 --seed 5 -r median
	spirt-store get agg/3 >md.rec
	fixture md.rec b2s5_median
}

@test "each rule states its precondition for the Byzantine count it is given" {
	byz
	run -64 --separate-stderr spirt-agg --byzantine 1 B.rec
	[ "$stderr" = 'spirt-agg: rule mean: tolerates no Byzantine input, not --byzantine 1: use trim, median, krum or cclip' ]
	run -64 --separate-stderr spirt-agg -r wmean --byzantine 2 B.rec
	[[ "$stderr" == *"rule wmean: tolerates no Byzantine input"* ]]
	run -64 --separate-stderr spirt-agg --trim 0.1 --byzantine 2 B.rec
	[ "$stderr" = 'spirt-agg: rule trim: --trim 0.1 of 10 inputs cuts 1 per side, fewer than --byzantine 2: needs floor(trim x W) >= f' ]
	spirt-agg --trim 0.2 --byzantine 2 B.rec >/dev/null
	run -64 --separate-stderr spirt-agg -r median --byzantine 5 B.rec
	[ "$stderr" = 'spirt-agg: rule median: 10 inputs with --byzantine 5: needs W > 2f = 10' ]
	spirt-agg -r median --byzantine 4 B.rec >/dev/null
	run -64 --separate-stderr spirt-agg -r norm --byzantine 5 B.rec
	[[ "$stderr" == *"rule norm: 10 inputs with --byzantine 5: needs W > 2f = 10"* ]]
	run -64 --separate-stderr spirt-agg -r cclip --byzantine 5 B.rec
	[[ "$stderr" == *"rule cclip: 10 inputs with --byzantine 5: needs W > 2f = 10"* ]]
	# with buckets, the rule sees the buckets
	run -64 --separate-stderr spirt-agg --bucket 2 -r krum --byzantine 2 B.rec
	[ "$stderr" = 'spirt-agg: rule krum: 5 buckets of 2 from 10 inputs with --byzantine 2: Krum needs W > 2f+2 = 6' ]
	run -64 --separate-stderr spirt-agg --bucket 2 --trim 0.1 B.rec
	[[ "$stderr" == *"rule trim: --trim 0.1 of 5 buckets of 2 from 10 inputs must cut at least one per side"* ]]
	run -64 --separate-stderr spirt-agg --bucket 2 -r median --byzantine 3 --check-rule 10
	[[ "$stderr" == *"rule median: 5 buckets of 2 from 10 inputs with --byzantine 3: needs W > 2f = 6"* ]]
	run -0 spirt-agg --bucket 2 -r median --byzantine 2 --check-rule 10
	run -0 spirt-agg -r krum --byzantine 2 --check-rule 10
	run -64 spirt-agg --bucket 2 -r krum --byzantine 2 --check-rule 10
	# parameters out of range
	run -64 spirt-agg -r cclip --tau 0 B.rec
	run -64 spirt-agg -r cclip --tau x B.rec
	run -64 spirt-agg -r cclip --iters 0 B.rec
	run -64 spirt-agg --bucket 0 B.rec
	run -64 spirt-agg --bucket 257 B.rec
	run -64 spirt-agg --seed -1 B.rec
	run -64 --separate-stderr spirt-agg -r median --center c.rec B.rec
	[[ "$stderr" == *"--center is the centre of rules cclip and scclip, not of median"* ]]
	run -66 --separate-stderr spirt-agg -r cclip --center nosuch.rec B.rec
	[[ "$stderr" == *"--center nosuch.rec: No such file"* ]]
	py "out(rec(np.zeros(5), name='m:37'))" >c5.rec
	run -65 --separate-stderr spirt-agg -r cclip --center c5.rec B.rec
	[[ "$stderr" == *"cclip: centre of 5 values, B.rec: record 0 has 37"* ]]
	: >empty.rec
	run -65 spirt-agg -r cclip --center empty.rec B.rec
}

@test "man page: each rule's precondition and the attacks it is known to fail against" {
	page=$(mandoc -Tascii "$SPIRT_ROOT/man/spirt-agg.1" |
		sed "s/.$(printf '\b')//g" | tr -s ' \n' '  ')
	grep -q 'W > 2f+2' <<<"$page"
	grep -q 'floor(trim x W) >= f' <<<"$page"
	grep -q 'W > 2f' <<<"$page"
	# one list per rule: mean wmean trim median norm krum mkrum cclip
	# scclip
	[ "$(grep -o 'Known to fail against' <<<"$page" | wc -l)" -eq 9 ]
}

# revs R...: grad/3/<w> of revision R (or - for none) for w = 0, 1, ...
revs() {
	local w=0 r
	for r; do
		if [ "$r" = - ]; then
			py "out(rec(G[$w], origin=$w))" >r$w.rec
		else
			py "out(rec(G[$w], origin=$w, revision=$r))" >r$w.rec
		fi
		spirt-store put "grad/3/$w" r$w.rec || return 1
		w=$((w + 1))
	done
}

@test "stragglers: a gradient of another assignment revision is not applied, named and counted (reason 4)" {
	# a data set, its assignment at revision 1
	for i in $(seq 0 7); do echo "$((i % 2)),$i"; done >t.csv
	spirt-shard -q -n 4 t.csv
	spirt-shard -q --dead 3
	revs 1 0 1 1 0 -
	run -0 --separate-stderr spirt-agg -q -t 3
	# named even with -q
	assert_equal "$stderr" "$(printf '%s\n' \
	    'spirt-agg: grad/3/1: not applied: assignment revision 0, not 1 (stale)' \
	    'spirt-agg: grad/3/4: not applied: assignment revision 0, not 1 (stale)')"
	spirt-store get agg/3 >a.rec
	check a.rec 'G[[0, 2, 3, 5]].mean(0)'
	py "r = get('a.rec'); assert r['count'] == 4, r['count']
x = st.read_record(open('a.rec', 'rb'))
assert x.revision is None and open('a.rec', 'rb').read(6)[4] == 1"
	spirt-store get agg/3/excluded >x.rec
	py "assert get('x.rec')['a'].tolist() == [[1, 4], [4, 4]]"
	# the same in warm mode
	run -0 --separate-stderr sh -c 'echo 3 | spirt-agg -q -R -i'
	assert_output 'step=3 count=4 loss=1'
	[[ "$stderr" == *"grad/3/4: not applied: assignment revision 0, not 1 (stale)"* ]]
	# every gradient stale: 66, nothing written
	revs 0 0
	spirt-store rm grad/3/2 grad/3/3 grad/3/4 grad/3/5
	before=$(store_digest spirt.db)
	run -66 --separate-stderr spirt-agg -q -R -t 3
	[[ "$stderr" == *"no gradients for step 3 left: 0 of a past step, 2 of another assignment revision"* ]]
	[ "$(store_digest spirt.db)" = "$before" ]
	# -d names the data set whose assignment is in force: one that has
	# none leaves the newest revision the gradients carry
	revs 0 2 0
	run -0 --separate-stderr spirt-agg -q -R -d other -t 3
	assert_equal "$stderr" "$(printf '%s\n' \
	    'spirt-agg: grad/3/0: not applied: assignment revision 0, not 2 (stale)' \
	    'spirt-agg: grad/3/2: not applied: assignment revision 0, not 2 (stale)')"
	SPIRT_DATASET=other run -0 spirt-agg -q -R -t 3
	spirt-store get agg/3/excluded >x.rec
	py "assert get('x.rec')['a'].tolist() == [[0, 4], [2, 4]]"
}

@test "stragglers in a stream: the newest revision wins, a past step with -t is left out" {
	py "out(rec(G[0], origin=0, revision=5), rec(G[1], origin=1, revision=4),
    rec(G[2], origin=2, revision=5), rec(G[3], origin=3),
    rec(G[4], origin=1, step=2, revision=5))" >s.rec
	run -0 --separate-stderr spirt-agg -t 3 -o out.rec s.rec
	[[ "$stderr" == *"s.rec: record 1: not applied: assignment revision 4, not 5 (stale)"* ]]
	[[ "$stderr" == *"s.rec: record 4: not applied: step 2, a past step (not 3)"* ]]
	# origin 1 twice is no conflict: one of them is not applied
	check out.rec 'G[[0, 2, 3]].mean(0)'
	py "assert get('out.rec')['count'] == 3"
}

@test "--slots MODEL: the warm functions' slots beside grad/<t>/<w>, the bits of the same gradients committed; misuse 64; a corrupt slot 65, nothing stored" {
	csv40
	spirt-shard -q -n 3 train.csv
	spirt-init -m m mlp:4-5-3
	# the gradients committed, then aggregated: the reference
	for w in 0 1 2; do spirt-grad -m m -t 0 -w $w -b 8; done
	spirt-agg -t 0 -r median
	spirt-store get agg/0 >ref
	spirt-store rm agg/0 agg/0/excluded grad/0/0 grad/0/1 grad/0/2
	# workers 0 and 2 into their slots, worker 1 committed: the same
	# three inputs, the same bits under median
	run -0 spirt-grad -i -m m -b 8 <<-EOF2
	0 0 to=slot
	0 2 to=slot
	EOF2
	spirt-grad -m m -t 0 -w 1 -b 8
	# (without --slots: worker 1's gradient alone)
	spirt-agg -t 0 -r median
	[ "$(spirt-store get agg/0 | md5sum)" = \
	    "$(spirt-store get grad/0/1 | md5sum)" ] ||
	    [ "$(spirt-store get agg/0 | md5sum)" != "$(md5sum <ref)" ]
	spirt-store rm agg/0 agg/0/excluded
	run -0 spirt-agg -t 0 -r median --slots m
	spirt-store get agg/0 | cmp - ref
	run -0 spirt-store ls grad/0/
	assert_output --regexp '^grad/0/1	'
	[ "${#lines[@]}" -eq 1 ]
	# warm, as spirt-train runs it; and -o, read-only
	spirt-store rm agg/0 agg/0/excluded
	run -0 spirt-agg -i -r median --slots m <<<0
	assert_output --regexp '^step=0 count=3 loss='
	spirt-store get agg/0 | cmp - ref
	spirt-agg -t 0 -r median --slots m -o out.rec
	cmp out.rec ref
	# slots of another model's step are none
	spirt-init -m n -S 2 mlp:4-5-3
	run -0 spirt-agg -t 0 -r median --slots n -o other.rec
	run -1 cmp -s other.rec ref
	# misuse: no step, keys or files, a URL, a bad name
	run -64 spirt-agg --slots m -k grad/0/1
	run -64 spirt-agg --slots m ref
	run -64 spirt-agg -r mean --slots 'a/b' -t 0
	run -64 spirt-agg -s http://127.0.0.1:9/ -t 0 --slots m
	# a slot whose header is corrupt: 65 naming it, no agg/0
	spirt-store rm agg/0 agg/0/excluded
	printf 'x' | dd of="$SPIRT_STORE/scratch/slot.2" bs=1 seek=40 \
	    conv=notrunc 2>/dev/null
	run -65 --separate-stderr spirt-agg -t 0 -r median --slots m
	[[ "$stderr" == *"scratch/slot.2"* ]]
	run -66 spirt-store get agg/0
}
