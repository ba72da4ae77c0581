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
	run -0 spirt-grad -V
	assert_line --index 0 --regexp '^spirt-grad [0-9]+\.[0-9]+\.[0-9]+$'
	assert_line --index 1 --regexp "^OpenBLAS core ${OPENBLAS_CORETYPE:-.*} \(env\)"
	OPENBLAS_CORETYPE= run -0 spirt-grad -V
	assert_line --index 1 --regexp '^OpenBLAS core [A-Za-z0-9]+ \((auto|detect)\)'
	if grep -q avx512bw /proc/cpuinfo; then
		assert_line --index 1 --regexp '^OpenBLAS core SkylakeX \(auto\)'
	fi
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
