#!/usr/bin/env bats
# 21-batch: spirt-store batch serves the minibatch of (step, worker) that
# spirt-grad computes with, from a store or through a peer's URL

load helper

SH="$DATA/shard"

# 24 one-hot samples, sample i = e_i with label i % 3, in 4 shards of 6
onehot() {
	awk 'BEGIN { for (i = 0; i < 24; i++) { printf "%d", i % 3
		for (j = 0; j < 24; j++) printf ",%d", i == j; print "" } }' \
	    >onehot.csv
	spirt-shard -q -n 4 --seed 2 onehot.csv
}

# both T W...: worker W's gradient of step T (its samples logged) and its
# batch, as records b<T>.<W>
both() {
	local t=$1 w
	shift
	for w; do
		SPIRT_SAMPLE_LOG=log spirt-grad -m m -t "$t" -w "$w" -b 2 -S 4 \
		    -o "g$t.$w"
		spirt-store batch -t "$t" -w "$w" -b 2 -S 4 >"b$t.$w"
	done
}

@test "batch: the samples spirt-grad takes, across a death mid-epoch and a return; each sample once an epoch" {
	onehot
	for t in $(seq 0 8); do spirt-init -q -m m -S 1 -t $t softmax:24:3; done
	# epoch 0: worker 2 dies after step 0 (its rest goes to the others)
	both 0 0 1 2 3
	spirt-shard -q -t 1 -b 2 --live 0,1,3
	both 1 0 1 3
	both 2 0 1 3
	# back for epoch 1
	spirt-shard -q --epoch 1 --live 0-3
	for t in 3 4 5; do both $t 0 1 2 3; done
	# epoch 2: workers 0 and 1 die at its last step
	for t in 6 7; do both $t 0 1 2 3; done
	spirt-shard -q -t 8 -b 2 --live 2,3
	both 8 2 3
	for k in 0 1 2 3; do
		spirt-store export data/train/$k/x x$k.npy
	done
	run -0 "$PYTHON" - "$SPIRT_ROOT/contrib/python" <<'PY'
import glob, re, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import spirt_tensor as st
x = [np.load("x%d.npy" % k).reshape(-1, 24) for k in range(4)]
got = {}
for f in sorted(glob.glob("b*.*")):
    t, w = map(int, re.match(r"b(\d+)\.(\d+)$", f).groups())
    fh = open(f, "rb")
    rx, ry = st.read_record(fh), st.read_record(fh)
    assert fh.read() == b"", f
    X, y = rx.array, ry.array
    assert X.dtype == np.float32 and X.shape == (len(y), 24), (f, X.shape)
    assert y.dtype == np.int32, f
    assert (X.sum(1) == 1).all(), f
    ids = list(np.argmax(X, 1))
    assert list(y) == [i % 3 for i in ids], (f, y, ids)
    for r in (rx, ry):
        assert (r.name, r.step, r.origin, r.samples) == \
            ("train", t, w, len(y)), (f, r)
    assert rx.revision == ry.revision, f
    got[t, w] = (ids, rx.revision)
# the batch is spirt-grad's, sample for sample, in its order
n = 0
for line in open("log"):
    m = dict(kv.split("=") for kv in line.split())
    t, w = int(m["step"]), int(m["worker"])
    ids = [int(np.argmax(x[int(k)][int(i)])) for k, i in
           (s.split(":") for s in m["samples"].split(","))]
    assert got[t, w] == (ids, int(m["revision"])), (t, w, got[t, w], ids)
    n += 1
assert n == len(got) == 4 + 3 + 3 + 12 + 8 + 2, (n, len(got))
# every sample once an epoch, across the reassignments
for e in range(3):
    flat = [i for (t, w), (ids, _) in got.items() if t // 3 == e
            for i in ids]
    assert sorted(flat) == list(range(24)), (e, sorted(flat))
assert {w: r for (t, w), (_, r) in got.items() if t == 1} == \
    {0: 1, 1: 1, 3: 1}
print("ok")
PY
	assert_output 'ok'
}

@test "batch --npy: x float32 of the samples' shape (bytes / 255), y int32; files or stdout, the records' values" {
	spirt-shard -q -n 2 "$SH/tiny-images-idx3-ubyte" "$SH/tiny-labels-idx1-ubyte"
	spirt-store export data/train/0/x x0.npy
	spirt-store export data/train/1/x x1.npy
	spirt-store export data/train/0/y y0.npy
	spirt-store export data/train/1/y y1.npy
	spirt-store batch -t 1 -w 1 -b 2 -S 9 -o rec
	spirt-store batch -t 1 -w 1 -b 2 -S 9 -o arr --npy
	spirt-store batch -t 1 -w 1 -b 2 -S 9 --npy >both.npy
	[ -f rec.x ] && [ -f rec.y ] && [ -f arr.x.npy ] && [ -f arr.y.npy ]
	# spirt-grad reads the same rows
	spirt-init -q -m m -t 1 softmax:12:10
	SPIRT_SAMPLE_LOG=log spirt-grad -m m -t 1 -w 1 -b 2 -S 9 -o g
	run -0 "$PYTHON" - "$SPIRT_ROOT/contrib/python" <<'PY'
import io, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import spirt_tensor as st
X, y = np.load("arr.x.npy"), np.load("arr.y.npy")
f = io.BytesIO(open("both.npy", "rb").read())
X2, y2 = np.load(f), np.load(f)
rx = st.read_record(open("rec.x", "rb"))
ry = st.read_record(open("rec.y", "rb"))
xs = [np.load("x%d.npy" % k) for k in (0, 1)]
ys = [np.load("y%d.npy" % k) for k in (0, 1)]
assert xs[0].dtype == np.uint8 and xs[0].shape[1:] == (1, 4, 3), xs[0].shape
assert X.dtype == np.float32 and X.shape == (2, 1, 4, 3), (X.dtype, X.shape)
assert y.dtype == np.int32 and y.shape == (2,), (y.dtype, y.shape)
assert X.tobytes() == X2.tobytes() == rx.array.tobytes()
assert y.tobytes() == y2.tobytes() == ry.array.tobytes()
line = open("log").read().split()
rows = [tuple(map(int, s.split(":")))
        for s in line[-1].split("=")[1].split(",")]
want = np.stack([xs[k][i] for k, i in rows]).astype(np.float32) * \
    np.float32(1 / 255)
assert X.tobytes() == want.tobytes(), (X, want)
assert list(y) == [ys[k][i] for k, i in rows]
print("ok")
PY
	assert_output 'ok'
}

@test "batch: u8 samples of 37 bytes (two runs of 16 and a tail of 5) are each byte times float32(1/255), bit for bit, in the pipe too" {
	"$PYTHON" -c '
import numpy as np
r = np.random.default_rng(1)
np.save("x.npy", r.integers(0, 256, (40, 37), dtype=np.uint8))
np.save("y.npy", r.integers(0, 3, 40).astype(np.int32))'
	spirt-shard -q -n 2 x.npy y.npy
	spirt-store batch -t 1 -w 1 -b 10 --npy >b.npy
	printf 'batch 1 1 10 0 train\n' | spirt-store pipe >p.out
	run -0 "$PYTHON" - "$SPIRT_ROOT/python" <<'PY'
import io, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
from spirt import tensor
x, y = np.load("x.npy"), np.load("y.npy")
f = io.BytesIO(open("b.npy", "rb").read())
X, Y = np.load(f), np.load(f)
assert X.shape == (10, 37) and X.dtype == np.float32, (X.shape, X.dtype)
# each row served is a row of the set, scaled as spirt-grad scales it
rows = {(x[i].astype(np.float32) * np.float32(1 / 255)).tobytes(): y[i]
        for i in range(len(x))}
assert len(rows) == len(x)
for i in range(10):
    assert X[i].tobytes() in rows, (i, X[i] * 255)
    assert rows[X[i].tobytes()] == Y[i]
p = open("p.out", "rb").read()
head, body = p.split(b"\n", 1)
assert head == b"0 %d" % len(body), head
rx, at = tensor.decode(body)
ry, _ = tensor.decode(body, at)
assert rx.array.tobytes() == X.tobytes() and ry.array.tobytes() == \
    Y.tobytes()
print("ok")
PY
	assert_output 'ok'
}

@test "batch: errors name the operand and write nothing (66 no data set or no samples, 64 no such worker or batch, 65 a step before the revision)" {
	onehot
	spirt-shard -q -t 1 -b 2 --live 0,1,3
	before=$(store_digest "$SPIRT_STORE")
	run -66 --separate-stderr spirt-store batch -t 1 -d nope -o o
	assert_equal "$stderr" 'spirt-store: data set nope: data/nope/info: no such key'
	run -64 --separate-stderr spirt-store batch -t 1 -w 4 -b 2 -o o
	assert_equal "$stderr" 'spirt-store: worker 4: no such worker: data set train has 4 shards, workers 0..3: invalid argument'
	run -66 --separate-stderr spirt-store batch -t 1 -w 2 -b 2 -S 4 -o o
	assert_equal "$stderr" 'spirt-store: data/train/assign: no samples for worker 2 at step 1 (revision 1): no such key'
	run -65 --separate-stderr spirt-store batch -t 0 -w 0 -b 2 -o o
	assert_equal "$stderr" 'spirt-store: data/train/assign: step 0 (epoch 0 step 0) comes before revision 1 (from epoch 0 step 1): wrong or unknown step'
	run -64 --separate-stderr spirt-store batch -t 1 -w 0 -b 3 -o o
	[[ "$stderr" == *"revision 1 counts epoch 0 from step 1 in batches of 2, not 3: "* ]]
	run -64 --separate-stderr env SPIRT_STEP= spirt-store batch -w 0 -b 2
	assert_equal "$stderr" 'spirt-store: batch: which step? give -t step'
	run -64 --separate-stderr env SPIRT_STEP=x spirt-store batch -w 0
	[[ "$stderr" == "spirt-store: SPIRT_STEP: "* ]]
	# a runner's variables stand for the options
	spirt-store batch -t 1 -w 3 -b 2 -S 4 >opt.rec
	SPIRT_STEP=1 SPIRT_WORKER=3 SPIRT_BATCH=2 SPIRT_SEED=4 \
	    SPIRT_DATASET=train spirt-store batch >env.rec
	cmp opt.rec env.rec
	run -64 --separate-stderr spirt-store batch -t 1 -b 0
	[[ "$stderr" == "spirt-store: -b: "* ]]
	run -64 --separate-stderr spirt-store ls -w 1
	[[ "$stderr" == "spirt-store: -b, -d, -o, -S, -w and --npy are batch's options"* ]]
	run -73 --separate-stderr spirt-store batch -t 1 -w 0 -b 2 -o nodir/o
	assert_equal "$stderr" 'spirt-store: nodir/o.x: No such file or directory'
	[ -z "$(ls o.* nodir 2>/dev/null)" ]
	[ "$(store_digest "$SPIRT_STORE")" = "$before" ]
	# a label beyond the data set's classes is refused, not served
	spirt-store export data/train/0/y y0.npy
	"$PYTHON" -c 'import numpy as np; y = np.load("y0.npy"); y[:] = 7; np.save("y0.npy", y)'
	spirt-store import data/train/0/y y0.npy
	run -65 --separate-stderr spirt-store batch -t 1 -w 0 -b 2 -o o
	[[ "$stderr" == "spirt-store: data set train: label outside 0..2: "* ]]
	[ -z "$(ls o.* 2>/dev/null)" ]
}

# ---- over a URL: a peer p1 serves, a function f1 asks ----

# (f1.key, f1.tok: a function whose id p1.w0-3 binds it to p1's workers)
members() {
	members_of p1:peer:p1 f1:function:p1.w0-3
}

serve() {
	mkfifo ready
	timeout -k 10 120 spirt-peer serve -k p1.key -T p1.tok -g group.pub \
	    -l 127.0.0.1:0 -F 3 "$@" 3>ready 2>srv.log &
	SRV=$!
	read -r -t 30 addr <ready || { cat srv.log; return 1; }
	URL="http://$addr"
}

teardown() {
	if [ -n "$SRV" ]; then
		kill -TERM "$SRV" 2>/dev/null
		wait "$SRV" 2>/dev/null
	fi
	return 0
}

@test "batch -s URL: a function's batch through its peer is the same bytes as local, after a reassignment too" {
	members
	onehot
	spirt-shard -q -t 4 -b 2 --live 0,2,3
	for t in 4 5 6; do
		spirt-store batch -t $t -w 0 -b 2 -S 4 >"l$t.rec"
		spirt-store batch -t $t -w 2 -b 2 -S 4 --npy >"l$t.npy"
	done
	serve
	export SPIRT_KEY=f1.key SPIRT_TOKEN=f1.tok SPIRT_GROUP=group.pub
	for t in 4 5 6; do
		spirt-store -s "$URL" batch -t $t -w 0 -b 2 -S 4 >"r$t.rec"
		cmp "l$t.rec" "r$t.rec"
		spirt-store -s "$URL" batch -t $t -w 2 -b 2 -S 4 --npy >"r$t.npy"
		cmp "l$t.npy" "r$t.npy"
	done
	# the dead worker's answer comes through the URL too
	run -66 --separate-stderr spirt-store -s "$URL" batch -t 4 -w 1 -b 2
	assert_equal "$stderr" 'spirt-store: data/train/assign: no samples for worker 1 at step 4 (revision 1): no such key'
	run -66 --separate-stderr spirt-store -s "$URL" batch -t 4 -d nope
	[[ "$stderr" == "spirt-store: data set nope: data/nope/info: "* ]]
	kill -TERM "$SRV"
	wait "$SRV"
	SRV=
	grep -q '^spirt-peer: stopped: [0-9]* served, 0 refused$' srv.log
}
