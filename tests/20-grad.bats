#!/usr/bin/env bats
# 20-grad: spirt-init, spirt-grad and spirt-eval on small data sets

load helper

# a 4-feature, 3-class CSV set of 40 rows in 2 shards, plus a test set
mkdata() {
	awk 'BEGIN { for (i = 0; i < 40; i++)
		printf "%d,%.3f,%.3f,%.3f,%.3f\n", i % 3, (i % 7) / 7,
		    (i % 5) / 5, (i % 3) / 3, (i % 11) / 11 }' >train.csv
	head -n 12 train.csv >test.csv
	spirt-shard -q -n 2 train.csv
	spirt-shard -q -d test test.csv
}

@test "spirt-grad writes grad/<t>/<w> with step, origin, samples, loss" {
	mkdata
	run -0 spirt-init -m m mlp:4-5-3
	run -0 spirt-grad -m m -t 0 -w 1 -b 8
	assert_output ''
	run -0 spirt-store show grad/0/1
	assert_line 'name=mlp:4-5-3'
	assert_line 'step=0'
	assert_line 'origin=1'
	assert_line 'samples=8'
	assert_line --regexp '^loss=[0-9.]+$'
	assert_line 'shape=43'
}

@test "same (seed, step, worker) gives identical bytes; others differ" {
	mkdata
	for t in 4 5; do spirt-init -m m -S 3 -t $t mlp:4-5-3; done
	spirt-grad -m m -t 4 -w 0 -b 6 -S 9 -o a
	spirt-grad -m m -t 4 -w 0 -b 6 -S 9 -o b
	cmp a b
	spirt-grad -m m -t 4 -w 0 -b 6 -S 9
	spirt-store get grad/4/0 | cmp - a
	# a retry overwrites the key with the same bytes
	spirt-grad -m m -t 4 -w 0 -b 6 -S 9
	spirt-store get grad/4/0 | cmp - a
	spirt-grad -m m -t 4 -w 0 -b 6 -S 10 -o c
	! cmp -s a c
	spirt-grad -m m -t 5 -w 0 -b 6 -S 9 -o d
	! cmp -s a d
	spirt-grad -m m -t 4 -w 1 -b 6 -S 9 -o e
	! cmp -s a e
}

@test "the last minibatch of an epoch is short; steps wrap to the next epoch" {
	mkdata
	for t in 0 1 2 3; do spirt-init -m m -t $t softmax:4:3; done
	# worker 0 has 20 samples: batches of 8, 8, 4, then a new epoch
	for t in 0 1 2 3; do
		spirt-grad -m m -t $t -b 8 -o g$t
		spirt-store inspect g$t >/dev/null
	done
	run -0 spirt-store inspect g2
	assert_line 'samples=4'
	run -0 spirt-store inspect g3
	assert_line 'samples=8'
}

@test "-o - writes the record to stdout, the store is untouched" {
	mkdata
	spirt-init -m m softmax:4:3
	before=$(store_digest "$SPIRT_STORE")
	spirt-grad -m m -t 0 -b 4 -o - >g
	[ "$(store_digest "$SPIRT_STORE")" = "$before" ]
	run -0 spirt-store inspect g
	assert_line 'samples=4'
	# an output that cannot be created: the cause, and 73
	run -73 --separate-stderr spirt-grad -m m -t 0 -b 4 -o no-dir/g
	[ "$stderr" = 'spirt-grad: no-dir/g: No such file or directory' ]
	run -73 --separate-stderr spirt-init -m m -o no-dir/m softmax:4:3
	[ "$stderr" = 'spirt-init: no-dir/m: No such file or directory' ]
	[ "$(store_digest "$SPIRT_STORE")" = "$before" ]
}

@test "each model kind computes a gradient (cnn on 16x16 images)" {
	awk 'BEGIN { srand(1); for (i = 0; i < 12; i++) { printf "%d", i % 4
		for (j = 0; j < 256; j++) printf ",%.2f", rand(); print "" } }' \
	    >img.csv
	spirt-shard -q -n 1 img.csv
	spirt-init -m c cnn:1x16x16-2-3-4
	spirt-init -m s softmax:256:4
	spirt-init -m p mlp:256-8-4
	for m in c s p; do
		run -0 spirt-grad -m $m -t 0 -b 5 -o - 
	done
}

@test "warm mode serves many steps and matches cold invocations" {
	mkdata
	spirt-init -m m mlp:4-5-3
	spirt-grad -m m -t 0 -w 1 -b 8 -o cold
	run -0 spirt-grad -i -m m -b 8 <<-EOF2
	0 1
	0
	EOF2
	assert_line --index 0 --regexp '^step=0 worker=1 samples=8 loss=[0-9.]+$'
	assert_line --index 1 --regexp '^step=0 worker=0 samples=8 loss='
	spirt-store get grad/0/1 | cmp - cold
}

@test "warm to=slot: the gradient in scratch/slot.<w>, the cold record's values, no grad/<t>/<w>; a bad word 64; a full disk 74" {
	mkdata
	spirt-init -m m mlp:4-5-3
	spirt-grad -m m -t 0 -w 1 -b 8 -o cold
	run -0 spirt-grad -i -m m -b 8 <<-EOF2
	0 1 to=slot
	0 0 to=slot
	0 1 to=slot
	EOF2
	assert_line --index 0 --regexp '^step=0 worker=1 samples=8 slot=scratch/slot.1 loss=[0-9.]+$'
	assert_line --index 1 --regexp '^step=0 worker=0 samples=8 slot=scratch/slot.0 loss='
	assert_line --index 2 "${lines[0]}"
	run -0 spirt-store ls grad/
	assert_output ''
	# its values (after the 4096-byte header) are the record's payload
	tail -c +4097 "$SPIRT_STORE/scratch/slot.1" | cmp - <(head -c -16 cold | tail -c 172)
	[ "$(od -An -tu8 -j8 -N8 "$SPIRT_STORE/scratch/slot.1" | tr -d ' ')" = 0 ]
	run -64 --separate-stderr spirt-grad -i -m m -b 8 <<<'0 to=disk'
	assert_output 'step=0 worker=0 error=64'
	[[ "$stderr" == *"stdin:1: to=: slot, the worker's gradient slot"* ]]
	# a full disk: the slot's blocks are reserved first, so it is 74
	# with the file named, not a SIGBUS later
	[ "$(id -u)" -eq 0 ] || skip "needs root to mount a small tmpfs"
	mkdir small
	mount -t tmpfs -o size=2m tmpfs small 2>/dev/null ||
		skip "cannot mount tmpfs here"
	cp -r "$SPIRT_STORE" small/db
	rm small/db/scratch/slot.*
	dd if=/dev/zero of=small/fill bs=4k 2>/dev/null || :
	run -74 --separate-stderr spirt-grad -i -s small/db -m m -b 8 <<<'0 to=slot'
	assert_output 'step=0 worker=0 error=74'
	[[ "$stderr" == *"small/db/scratch/slot.0: No space left on device"* ]]
	umount small
}

teardown() {
	mountpoint -q "$BATS_TEST_TMPDIR/small" 2>/dev/null &&
		umount "$BATS_TEST_TMPDIR/small"
	return 0
}

@test "warm mode reports a failed invocation and goes on" {
	mkdata
	spirt-init -m m mlp:4-5-3
	run -66 --separate-stderr spirt-grad -i -m m -b 8 <<-EOF2
	7
	0
	EOF2
	assert_line --index 0 'step=7 worker=0 error=66'
	assert_line --index 1 --regexp '^step=0 worker=0 samples=8'
	[[ "$stderr" == *"model/m@7: no such key"* ]]
}

@test "usage errors exit 64" {
	run -64 spirt-grad -t 0
	run -64 spirt-grad -m m
	run -64 spirt-grad -m m -t 0 -b 0
	run -64 spirt-grad -m m -t x
	run -64 spirt-grad -m m -i -o x
	run -64 spirt-grad -m m -t 0 extra
	run -64 spirt-init -m m mlp:4
	run -64 spirt-init -m 'a/b' mlp:4-3
	run -64 spirt-init mlp:4-3
	run -64 spirt-eval
}

@test "missing store, model, step or data set: 66, nothing written" {
	run -66 --separate-stderr spirt-grad -s nosuch.db -m m -t 0
	[[ "$stderr" == "spirt-grad: nosuch.db: "* ]]
	mkdata
	spirt-init -m m mlp:4-5-3
	before=$(store_digest "$SPIRT_STORE")
	run -66 --separate-stderr spirt-grad -m nomodel -t 0
	assert_equal "$stderr" 'spirt-grad: model/nomodel@0: no such key'
	run -66 --separate-stderr spirt-grad -m m -t 3
	assert_equal "$stderr" 'spirt-grad: model/m@3: no such key'
	run -66 --separate-stderr spirt-grad -m m -t 0 -d nodata
	assert_equal "$stderr" 'spirt-grad: data/nodata/info: no such key'
	run -66 --separate-stderr spirt-grad -m m -t 0 -w 9
	[[ "$stderr" == *"data/train/assign: no samples for worker 9"* ]]
	[ "$(store_digest "$SPIRT_STORE")" = "$before" ]
}

@test "a model that does not fit its data or its spec: 65, nothing written" {
	mkdata
	spirt-init -m wide mlp:5-4-3
	spirt-init -m m mlp:4-5-3
	# a record named as one spec holding another's parameters
	spirt-init -o small.rec softmax:4:3
	$PYTHON - <<-'EOF2'
	import numpy
	numpy.save("wrong.npy", numpy.zeros(7, dtype=numpy.float32))
	EOF2
	spirt-store import -t 0 model/nospec@0 wrong.npy
	before=$(store_digest "$SPIRT_STORE")
	run -65 --separate-stderr spirt-grad -m wide -t 0
	[[ "$stderr" == *"has 4 features per sample, model mlp:5-4-3 takes 5"* ]]
	run -65 --separate-stderr spirt-grad -m nospec -t 0
	[[ "$stderr" == *"model/nospec@0: spec"*"malformed model spec"* ]]
	[ "$(store_digest "$SPIRT_STORE")" = "$before" ]
}

@test "bad model records: wrong shape, dtype, step, NaN: 65, nothing written" {
	mkdata
	PYTHONPATH="$SPIRT_ROOT/contrib/python" $PYTHON - <<-'EOF2'
	import numpy, spirt_tensor as st
	def rec(path, a, **m):
	    with open(path, "wb") as f:
	        st.write_record(f, a, **m)
	rec("shape.rec", numpy.zeros(40, "f4"), name="mlp:4-5-3", step=0)
	rec("dtype.rec", numpy.zeros(43, "f8"), name="mlp:4-5-3", step=0)
	rec("step.rec", numpy.zeros(43, "f4"), name="mlp:4-5-3", step=3)
	nan = numpy.zeros(43, "f4"); nan[7] = numpy.nan
	rec("nan.rec", nan, name="mlp:4-5-3", step=0)
	EOF2
	for k in shape dtype step nan; do
		spirt-store put model/$k@0 $k.rec
	done
	before=$(store_digest "$SPIRT_STORE")
	run -65 --separate-stderr spirt-grad -m shape -t 0
	assert_equal "$stderr" 'spirt-grad: model/shape@0: 40 values of rank 1, spec mlp:4-5-3 needs 43: bad or mismatched shape'
	run -65 --separate-stderr spirt-grad -m dtype -t 0
	[[ "$stderr" == "spirt-grad: model/dtype@0: dtype f64, want f32"* ]]
	run -65 --separate-stderr spirt-grad -m step -t 0
	[[ "$stderr" == "spirt-grad: model/step@0: record says step 3"* ]]
	run -65 --separate-stderr spirt-grad -m nan -t 0
	[[ "$stderr" == "spirt-grad: model/nan@0: 1 non-finite parameters"* ]]
	[ "$(store_digest "$SPIRT_STORE")" = "$before" ]
}

@test "spirt-init refuses to overwrite a model: 73" {
	spirt-init -m m softmax:4:3
	before=$(store_digest "$SPIRT_STORE")
	run -73 --separate-stderr spirt-init -m m softmax:4:3
	[[ "$stderr" == "spirt-init: model/m@0: key exists"* ]]
	[ "$(store_digest "$SPIRT_STORE")" = "$before" ]
}

@test "spirt-init is deterministic in its seed" {
	spirt-init -S 5 -o a mlp:4-5-3
	spirt-init -S 5 -o b mlp:4-5-3
	spirt-init -S 6 -o c mlp:4-5-3
	cmp a b
	! cmp -s a c
}

@test "spirt-eval prints loss, accuracy and per-class accuracy" {
	mkdata
	spirt-init -m m mlp:4-5-3
	run -0 --separate-stderr spirt-eval -m m
	assert_line 'model=m'
	assert_line 'step=0'
	assert_line 'dataset=test'
	assert_line 'samples=12'
	assert_line --regexp '^loss=[0-9.]+$'
	assert_line --regexp '^accuracy=[01]\.[0-9]{4}$'
	assert_line --regexp '^accuracy\.2=[01]\.[0-9]{4}$'
	run -66 spirt-eval -m nosuch
	run -66 spirt-eval -m m -t 5
	run -66 spirt-eval -m m -d nodata
}

@test "OpenBLAS core: an explicit OPENBLAS_CORETYPE wins, else spirt picks" {
	# the same whether or not the caller's environment sets it
	OPENBLAS_CORETYPE=Haswell run -0 spirt-grad -V
	assert_line --index 0 --regexp '^spirt-grad [0-9]+\.[0-9]+\.[0-9]+$'
	assert_line --index 1 --regexp '^OpenBLAS core Haswell \(env\)'
	for unset in 'env -u OPENBLAS_CORETYPE' 'env OPENBLAS_CORETYPE='; do
		run -0 $unset spirt-grad -V
		assert_line --index 0 --regexp \
		    '^spirt-grad [0-9]+\.[0-9]+\.[0-9]+$'
		assert_line --index 1 --regexp \
		    '^OpenBLAS core [A-Za-z0-9]+ \((auto|detect)\)'
		if grep -q avx512bw /proc/cpuinfo; then
			assert_line --index 1 --regexp \
			    '^OpenBLAS core SkylakeX \(auto\)'
		fi
	done
	OPENBLAS_CORETYPE=Haswell run -0 spirt-eval -V
	assert_line --index 1 --regexp '^OpenBLAS core Haswell \(env\)'
}

@test "gradients agree whichever core runs" {
	mkdata
	spirt-init -m m mlp:4-5-3
	OPENBLAS_CORETYPE=Haswell spirt-grad -m m -t 0 -b 8 -o h
	OPENBLAS_CORETYPE= spirt-grad -m m -t 0 -b 8 -o a
	SPIRT_BLAS_LIB=/nonexistent spirt-grad -q -m m -t 0 -b 8 -o n
	run -0 spirt-store inspect h a n
	[ "$(grep -c '^loss=' <<<"$output")" -eq 3 ]
	[ "$(grep '^loss=' <<<"$output" | cut -c1-11 | sort -u | wc -l)" -eq 1 ]
}

@test "-v says which core runs and times the invocation" {
	mkdata
	spirt-init -m m softmax:4:3
	run -0 --separate-stderr spirt-grad -v -m m -t 0
	[[ "$stderr" == *"OpenBLAS core "*" thread"* ]]
	[[ "$stderr" == *"step 0 worker 0: 20 samples, loss "*" ms"* ]]
}

# ---- files instead of the store (-p, -D) ----

# the data of mkdata as a data file of 2 pairs, a model as a model file and
# the same model at the same step in the store
mkfiles() {
	mkdata
	spirt-shard -q -n 2 -o d.spt train.csv
	spirt-shard -q -d test -o t.spt test.csv
	spirt-init -S 3 -t 4 -o m.spt mlp:4-5-3
	spirt-init -m m -S 3 -t 4 mlp:4-5-3
}

# samegrad A B: gradient records A (from the store's data: assignment
# revision 0) and B (from a data file: no revision) alike in all else
samegrad() {
	"$PYTHON" -c "$PYREC
a, b = (st.read_record(open(f, 'rb')) for f in ('$1', '$2'))
assert a.revision == 0 and b.revision is None, (a.revision, b.revision)
assert (a.array.tobytes(), a.name, a.step, a.origin, a.samples, a.loss) == \\
    (b.array.tobytes(), b.name, b.step, b.origin, b.samples, b.loss)"
}

@test "-p and -D: the same gradient as from the store, and no store opened" {
	mkfiles
	spirt-store get model/m@4 | cmp - m.spt
	for w in 0 1; do
		spirt-grad -m m -t 4 -w $w -b 6 -S 9 -o a$w
		SPIRT_STORE=$PWD/none.db spirt-grad -p m.spt -D d.spt \
		    -w $w -b 6 -S 9 >b$w
		samegrad a$w b$w
	done
	[ ! -e none.db ]
	# either file alone, the rest from the store
	spirt-grad -p m.spt -w 1 -b 6 -S 9 -o c
	cmp a1 c
	spirt-grad -m m -t 4 -D d.spt -w 1 -b 6 -S 9 -o c
	samegrad a1 c
	# -p without -o writes grad/<t>/<w> to the store, t from the record
	run -0 spirt-grad -p m.spt -w 1 -b 6 -S 9
	assert_output ''
	spirt-store get grad/4/1 | cmp - a1
	# a model file may carry the optimiser state as a second record
	cat m.spt m.spt >m2.spt
	spirt-grad -p m2.spt -D d.spt -w 1 -b 6 -S 9 -o c
	samegrad a1 c
	# stdin
	spirt-grad -p - -D d.spt -w 1 -b 6 -S 9 -o c <m.spt
	samegrad a1 c
	spirt-grad -p m.spt -D - -w 1 -b 6 -S 9 -o c <d.spt
	samegrad a1 c
}

@test "-D: several pairs give worker w pair w; a single pair serves all" {
	mkfiles
	run -66 --separate-stderr spirt-grad -p m.spt -D d.spt -w 2
	assert_equal "$stderr" "spirt-grad: d.spt: 2 x, y pairs, none for worker 2: no such key"
	spirt-shard -q -o one.spt train.csv
	spirt-grad -p m.spt -D one.spt -w 7 -b 8 -o g7
	run -0 spirt-store inspect g7
	assert_line 'origin=7'
	assert_line 'samples=8'
	spirt-grad -p m.spt -D one.spt -w 0 -b 8 -o g0
	! cmp -s g0 g7
}

@test "-p, -D errors: step, missing, truncated, malformed; usage" {
	mkfiles
	run -0 spirt-grad -p m.spt -D d.spt -t 4 -o g4
	run -65 --separate-stderr spirt-grad -p m.spt -D d.spt -t 3 -o g
	assert_equal "$stderr" "spirt-grad: m.spt: record says step 4, want 3: wrong or unknown step"
	run -66 spirt-grad -p nosuch.spt -D d.spt -o g
	run -66 spirt-grad -p m.spt -D nosuch.spt -o g
	head -c 100 m.spt >short.spt
	run -65 spirt-grad -p short.spt -D d.spt -o g
	: >empty.spt
	run -65 spirt-grad -p empty.spt -D d.spt -o g
	run -65 --separate-stderr spirt-grad -p m.spt -D empty.spt -o g
	assert_equal "$stderr" "spirt-grad: empty.spt: record 0: no records: truncated record"
	# an x without its y
	run -65 --separate-stderr spirt-grad -p m.spt -D m.spt -o g
	[[ "$stderr" == "spirt-grad: m.spt: record 1: labels (y) missing"* ]]
	# a data file that does not fit the model
	spirt-init -o s.spt softmax:5:3
	run -65 --separate-stderr spirt-grad -p s.spt -D d.spt -o g
	assert_equal "$stderr" "spirt-grad: d.spt: record 0: 80 values for 20 samples of 5 features: bad or mismatched shape"
	[ ! -e g ]
	run -64 spirt-grad -i -p m.spt
	run -64 spirt-grad -p - -D - -o g
}

@test "spirt-eval -p -D: the store's figures without a store" {
	mkfiles
	spirt-eval -m m -t 4 | grep -v '^model=\|^dataset=' >a
	SPIRT_STORE=$PWD/none.db spirt-eval -p m.spt -D t.spt >b
	[ ! -e none.db ]
	grep -q '^model=m.spt$' b
	grep -q '^dataset=t.spt$' b
	grep -v '^model=\|^dataset=' b | diff a -
	run -65 spirt-eval -p m.spt -D t.spt -t 5
	run -66 spirt-eval -p m.spt -D nosuch
	run -64 spirt-eval -p - -D -
}

@test "a store-free step: shard, init, grad to files, eval" {
	mkdata
	rm -rf "$SPIRT_STORE"
	spirt-shard -q -n 2 -o - train.csv >d.spt
	spirt-init -o m.spt mlp:4-5-3
	for w in 0 1; do spirt-grad -p m.spt -D d.spt -w $w -b 8; done >grads
	run -0 spirt-store inspect grads
	[ "$(grep -c '^record=' <<<"$output")" -eq 2 ]
	assert_line 'origin=0'
	assert_line 'origin=1'
	head -n 12 train.csv | spirt-shard -q -f csv -d test -o t.spt -
	run -0 spirt-eval -p m.spt -D t.spt
	assert_line 'samples=12'
	[ ! -e "$SPIRT_STORE" ]
}

@test "every sample of a worker's share is seen exactly once per epoch" {
	# sample i is the one-hot vector e_i, so column i of a softmax
	# model's weight gradient is non-zero exactly when i is in the batch
	awk 'BEGIN { for (i = 0; i < 22; i++) { printf "%d", i % 3
		for (j = 0; j < 22; j++) printf ",%d", i == j; print "" } }' \
	    >onehot.csv
	spirt-shard -q -n 2 --seed 5 -o d.spt onehot.csv
	# 11 samples per worker, batches of 4: 4, 4, 3 per epoch
	for t in 0 1 2 3 4 5; do
		spirt-init -S 1 -t $t -o m$t.spt softmax:22:3
		for w in 0 1; do
			spirt-grad -p m$t.spt -D d.spt -w $w -b 4 -S 8 -o g$t.$w
		done
	done
	run -0 "$PYTHON" - "$SPIRT_ROOT/contrib/python" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import spirt_tensor as st
share = {}
for w in (0, 1):
    for e in (0, 1):
        seen = []
        for t in range(3 * e, 3 * e + 3):
            with open("g%d.%d" % (t, w), "rb") as f:
                r = st.read_record(f)
            cols = np.nonzero(np.abs(r.array[:66].reshape(3, 22)).sum(0))[0]
            want = 3 if t % 3 == 2 else 4
            assert r.samples == want == len(cols), (t, w, r.samples, cols)
            seen += list(cols)
        assert len(seen) == len(set(seen)) == 11, (w, e, sorted(seen))
        if e == 0:
            share[w] = set(seen)
        else:
            assert share[w] == set(seen), (w, share[w], seen)
assert share[0] | share[1] == set(range(22)) and not share[0] & share[1]
print("ok")
PY
	assert_output 'ok'
}

@test "warm mode: SIGTERM and SIGINT end it after the current invocation" {
	mkdata
	spirt-init -m m softmax:4:3
	for sig in TERM INT; do
		rm -f in out
		mkfifo in
		spirt-grad -i -m m <in >out 3>&- &
		pid=$!
		exec 5>in
		echo 0 >&5
		for i in $(seq 100); do
			grep -q '^step=0 ' out && break
			sleep 0.05
		done
		kill -$sig $pid
		st=0
		wait $pid || st=$?
		exec 5>&-
		[ "$st" -eq 0 ] || fail "SIG$sig: exit $st"
		grep -q '^step=0 worker=0 samples=20 ' out
	done
	spirt-store show grad/0/0 >/dev/null
}

@test "-v names what a gradient's bits depend on; held fixed, same bits" {
	# byte images (IDX), so spirt's byte-to-float kernel runs too
	"$PYTHON" -c "
import random, struct
random.seed(3)
n = 40
open('img.idx', 'wb').write(struct.pack('>IIII', 0x803, n, 6, 6) +
                            bytes(random.randrange(256) for _ in range(n * 36)))
open('lab.idx', 'wb').write(struct.pack('>II', 0x801, n) +
                            bytes(i % 3 for i in range(n)))
"
	spirt-shard -q -n 1 img.idx lab.idx
	spirt-init -m m mlp:36-64-3
	SPIRT_ISA=base run -0 --separate-stderr spirt-grad -v -m m -t 0 -b 32 \
	    -o a
	re='spirt-grad: determinism: threads=1 openblas=[0-9.]+ '
	re+='core=[A-Za-z0-9]+ isa=base'
	[[ "$stderr" =~ $re ]]
	# one thread twice: the same bits
	SPIRT_THREADS=1 spirt-grad -m m -t 0 -b 32 -o b
	cmp a b
	# spirt's own kernels at every level the CPU has: the same bits
	for l in avx2 avx512; do
		grep -qw "$l$([ $l = avx512 ] && echo f)" /proc/cpuinfo ||
			continue
		SPIRT_ISA=$l spirt-grad -m m -t 0 -b 32 -o c
		cmp a c
	done
	SPIRT_THREADS=2 run -0 --separate-stderr spirt-grad -v -m m -t 0 -o d
	[[ "$stderr" == *"determinism: threads=2 openblas="* ]]
	SPIRT_BLAS_LIB=/nonexistent run -0 --separate-stderr \
	    spirt-grad -v -m m -t 0 -b 32 -o n
	[[ "$stderr" == *"reference kernels"* ]]
	want='determinism: threads=1 openblas=none core=naive isa='
	[[ "$stderr" == *"$want"* ]]
}

@test "from the store, across a death mid-epoch and a return: each sample once per epoch" {
	# sample i is e_i (one-hot), so the columns of a softmax gradient
	# that are not zero are its batch; 4 shards of 6, batch 2: 3 steps
	# an epoch
	awk 'BEGIN { for (i = 0; i < 24; i++) { printf "%d", i % 3
		for (j = 0; j < 24; j++) printf ",%d", i == j; print "" } }' \
	    >onehot.csv
	spirt-shard -q -n 4 --seed 2 onehot.csv
	for t in $(seq 0 8); do spirt-init -q -m m -S 1 -t $t softmax:24:3; done
	grad() {        # grad T W...: worker W's gradient of step T
		local t=$1 w
		shift
		for w; do
			SPIRT_SAMPLE_LOG=log spirt-grad -m m -t "$t" -w "$w" \
			    -b 2 -S 4 -o "g$t.$w"
		done
	}
	# epoch 0: worker 2 dies after step 0; what it had left goes to the
	# others for steps 1 and 2
	grad 0 0 1 2 3
	run -0 --separate-stderr spirt-shard -v -t 1 -b 2 --live 0,1,3
	assert_equal "$stderr" 'spirt-shard: data/train/assign: revision 1 from epoch 0 step 1'
	# it has nothing to do, and step 0 is history
	run -66 --separate-stderr spirt-grad -m m -t 1 -w 2 -b 2 -S 4 -o x
	assert_equal "$stderr" 'spirt-grad: data/train/assign: no samples for worker 2 at step 1 (revision 1): no such key'
	run -65 --separate-stderr spirt-grad -m m -t 0 -w 0 -b 2 -S 4 -o x
	assert_equal "$stderr" 'spirt-grad: data/train/assign: step 0 (epoch 0 step 0) comes before revision 1 (from epoch 0 step 1): wrong or unknown step'
	# another batch would count other steps
	run -64 --separate-stderr spirt-grad -m m -t 1 -w 0 -b 3 -S 4 -o x
	[[ "$stderr" == *"revision 1 counts epoch 0 from step 1 in batches of 2, not 3"* ]]
	grad 1 0 1 3
	grad 2 0 1 3
	# it is back for epoch 1
	spirt-shard -q --epoch 1 --live 0-3
	for t in 3 4 5; do grad $t 0 1 2 3; done
	# epoch 2: worker 1 dies at the epoch's last step, 0 too
	for t in 6 7; do grad $t 0 1 2 3; done
	spirt-shard -q -t 8 -b 2 --live 2,3
	grad 8 2 3
	for k in 0 1 2 3; do
		spirt-store export data/train/$k/x x$k.npy
	done
	run -0 "$PYTHON" - "$SPIRT_ROOT/contrib/python" <<'PY'
import glob, re, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import spirt_tensor as st
x = [np.load("x%d.npy" % k).reshape(-1, 24) for k in range(4)]
steps = {}
for f in sorted(glob.glob("g*.*")):
    t, w = map(int, re.match(r"g(\d+)\.(\d+)$", f).groups())
    r = st.read_record(open(f, "rb"))
    cols = set(np.nonzero(np.abs(r.array[:72].reshape(3, 24)).sum(0))[0])
    assert r.samples == len(cols) and r.revision is not None, (f, r)
    steps.setdefault(t, {})[w] = (cols, r.revision)
# the log names the same samples, by shard and row
for line in open("log"):
    m = dict(kv.split("=") for kv in line.split())
    t, w = int(m["step"]), int(m["worker"])
    ids = {int(np.argmax(x[int(k)][int(i)])) for k, i in
           (s.split(":") for s in m["samples"].split(","))}
    assert ids == steps[t][w][0], (t, w, ids, steps[t][w][0])
    assert int(m["revision"]) == steps[t][w][1]
for e in range(3):
    seen = [c for t in range(3 * e, 3 * e + 3) for c, _ in steps[t].values()]
    flat = [i for c in seen for i in c]
    assert sorted(flat) == list(range(24)), (e, sorted(flat))
assert {w: r for w, (c, r) in steps[1].items()} == {0: 1, 1: 1, 3: 1}
assert set(steps[8]) == {2, 3} and steps[8][2][1] == 3
print("ok")
PY
	assert_output 'ok'
}
