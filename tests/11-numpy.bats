#!/usr/bin/env bats
# 11-numpy: spirt-shard reads NumPy data sets, a .npy pair or a .npz
# archive (numpy.savez, savez_compressed), into the shards CSV gives

load helper

# the fixtures, made by numpy: 30 samples of 2x3 float32 values, labels
# 0..3 as int16; d.csv the same as text (repr of the float32 round-trips)
fixtures() {
	"$PYTHON" - <<'PY'
import numpy as np
r = np.random.default_rng(1)
X = r.standard_normal((30, 2, 3)).astype(np.float32)
y = r.integers(0, 4, 30).astype(np.int16)
np.save("X3.npy", X)
np.save("X.npy", X.reshape(30, 6))
np.save("y.npy", y)
np.save("X64.npy", X.reshape(30, 6).astype(np.float64))
np.save("Xu8.npy", (np.abs(X) * 40).astype(np.uint8))
np.save("Xf.npy", np.asfortranarray(X.reshape(30, 6)))
np.save("yu64.npy", y.astype(np.uint64))
np.save("yi8.npy", y.astype(np.int8))
np.save("Xi.npy", X.reshape(30, 6).astype(np.int32))
np.save("yf.npy", y.astype(np.float32))
np.save("y2.npy", y.reshape(15, 2))
np.save("y29.npy", y[:29])
bad = y.copy(); bad[7] = -1
np.save("yneg.npy", bad)
big = y.astype(np.int64); big[3] = 70000
np.save("ybig.npy", big)
nan = X.reshape(30, 6).copy(); nan[4, 2] = np.nan
np.save("Xnan.npy", nan)
np.savez("a.npz", X=X.reshape(30, 6), y=y)
np.savez_compressed("c.npz", x=X.reshape(30, 6), y=y.astype(np.uint8))
np.savez("n.npz", feat=X.reshape(30, 6), lab=y)
np.savez("noy.npz", X=X.reshape(30, 6), labels=y)
with open("d.csv", "w") as f:
    for i in range(30):
        f.write(",".join([str(y[i])] +
                         [repr(float(v)) for v in X[i].ravel()]) + "\n")
PY
}

@test "a .npy pair, a .npz (stored, deflated, named arrays) and float64 make the shards the same data as CSV makes, byte for byte" {
	fixtures
	spirt-shard -q -s csv.db -n 3 --seed 5 d.csv
	want=$(store_digest csv.db)
	for s in "X.npy y.npy" "X64.npy yi8.npy" "X.npy yu64.npy" a.npz \
	    c.npz "--arrays feat,lab n.npz" "-f npz n.npz --arrays feat,lab" \
	    "-f npy X.npy y.npy"; do
		rm -rf db
		# shellcheck disable=SC2086
		spirt-shard -q -s db -n 3 --seed 5 $s
		[ "$(store_digest db)" = "$want" ] || fail "$s: other shards"
	done
}

@test "NumPy: the samples' shape is kept, uint8 samples stay bytes" {
	fixtures
	spirt-shard -q -s db -n 2 --no-shuffle X3.npy y.npy
	run -0 spirt-store -s db ls data/train/0/
	assert_line --index 0 $'data/train/0/x\tf32\t15x2x3\t360\t-\t-'
	spirt-shard -q -s u8 -n 2 --no-shuffle Xu8.npy y.npy
	run -0 spirt-store -s u8 ls data/train/1/x
	assert_output $'data/train/1/x\tu8\t15x2x3\t90\t-\t-'
	spirt-store -s u8 export data/train/1/x x1.npy
	spirt-store -s db export data/train/0/x x0.npy
	run -0 "$PYTHON" -c '
import numpy as np
X, u = np.load("X3.npy"), np.load("Xu8.npy")
assert np.load("x0.npy").tobytes() == X[:15].tobytes()
assert np.load("x1.npy").tobytes() == u[15:].tobytes()
print("ok")'
	assert_output 'ok'
}

@test "NumPy: bad arrays and archives exit 65 naming the file, store unchanged" {
	fixtures
	spirt-shard -q d.csv
	before=$(store_digest "$SPIRT_STORE")
	# truncated and corrupt files, made from good ones
	head -c 200 X.npy >trunc.npy
	head -c 300 a.npz >trunc.npz
	printf 'not numpy at all' >junk.npy
	"$PYTHON" -c '
b = bytearray(open("c.npz", "rb").read())
b[60] ^= 0xff
open("crc.npz", "wb").write(b)
b = bytearray(open("a.npz", "rb").read())
b[300] ^= 0x01
open("crc2.npz", "wb").write(b)'
	while IFS='|' read -r args want; do
		# shellcheck disable=SC2086
		run -65 --separate-stderr spirt-shard $args
		assert_equal "$stderr" "spirt-shard: $want"
	done <<-'EOF'
	trunc.npy y.npy|trunc.npy: truncated: the shape says 720 bytes, the data holds 72
	junk.npy y.npy|junk.npy: not a NumPy .npy image (bad magic or header)
	Xi.npy y.npy|Xi.npy: samples of dtype '<i4': float32, float64 or uint8 only
	Xf.npy y.npy|Xf.npy: Fortran order: save a C-order array (numpy.ascontiguousarray)
	Xnan.npy y.npy|Xnan.npy: record 4: value nan is not a finite float32
	X.npy yf.npy|yf.npy: labels of dtype '<f4': integers only
	X.npy y2.npy|y2.npy: labels must be of rank 1, not 2
	X.npy y29.npy|y29.npy: 29 labels for 30 samples
	X.npy yneg.npy|yneg.npy: record 7: label -1 outside 0..65535
	X.npy ybig.npy|ybig.npy: record 3: label 70000 outside 0..65535
	--classes 3 X.npy y.npy|y.npy: record 1: label 3 outside 0..2
	trunc.npz|trunc.npz: not a zip archive (.npz): no end of central directory
	crc.npz|crc.npz: x.npy: deflate data corrupt or of another size than the directory says
	crc2.npz|crc2.npz: X.npy: CRC-32 mismatch: corrupt
	noy.npz|noy.npz: no array y or Y in the archive
	--arrays X,lab a.npz|a.npz: no array lab in the archive
	--dim 5 X.npy y.npy|y.npy: 6 values per sample, not --dim 5
	EOF
	[ "$(store_digest "$SPIRT_STORE")" = "$before" ]
	run -66 --separate-stderr spirt-shard nothere.npy y.npy
	assert_equal "$stderr" 'spirt-shard: nothere.npy: No such file or directory'
	run -64 --separate-stderr spirt-shard --arrays X X.npy y.npy
	assert_equal "$stderr" 'spirt-shard: --arrays X: not two array names, as X,y'
	run -64 --separate-stderr spirt-shard --arrays X,y X.npy y.npy
	assert_equal "$stderr" 'spirt-shard: X.npy: array names are for .npz only'
	run -64 --separate-stderr spirt-shard a.npz y.npy
	assert_equal "$stderr" 'spirt-shard: a.npz: IDX and .npy take two files (samples, labels), CSV, LIBSVM and .npz one'
	[ "$(store_digest "$SPIRT_STORE")" = "$before" ]
}
