#!/usr/bin/env bats
# 21-pipe: spirt-store pipe answers get, batch and put over one open store
# with the bytes the commands write, each request its own transaction; a
# refused request gets its code and the next one is read; a put cut short
# ends it; nothing bad is written; putf32 makes spirt-grad's record from
# a vector's bytes and its metadata

load helper

# 24 one-hot samples in 4 shards of 6, a model at step 3, the gradient of
# worker 1 at step 3 (g.rec) and what get and batch write for them
fixture() {
	awk 'BEGIN { for (i = 0; i < 24; i++) { printf "%d", i % 3
		for (j = 0; j < 24; j++) printf ",%d", i == j; print "" } }' \
	    >onehot.csv
	spirt-shard -q -n 4 --seed 2 onehot.csv
	spirt-init -q -m m -S 1 -t 3 softmax:24:3
	spirt-grad -m m -t 3 -w 1 -b 2 -S 4 -o g.rec
	spirt-store get model/m@3 >m.rec
	spirt-store batch -t 3 -w 1 -b 2 -S 4 >b.rec
}

# answers OUT: each answer's "code length" line, its bytes in a<i>
answers() {
	"$PYTHON" - "$1" <<'PY'
import sys
f, i = open(sys.argv[1], "rb"), 0
while True:
    line = f.readline()
    if not line:
        break
    n = int(line.split()[1])
    b = f.read(n)
    assert len(b) == n, "answer %d: %d bytes of %d" % (i, len(b), n)
    open("a%d" % i, "wb").write(b)
    print(line.decode().rstrip("\n"))
    i += 1
PY
}

# pipe REQ: spirt-store pipe, its requests from REQ, its answers in out
# (its messages are the output)
pipe() {
	spirt-store pipe <"$1" 2>&1 >out
}

@test "pipe: get, batch and put answer the bytes the commands write and store, over one open store" {
	fixture
	{
		echo "get model/m@3"
		echo "batch 3 1 2 4 train"
		echo "put grad/3/1 $(wc -c <g.rec)"
		cat g.rec
		echo "get grad/3/1"
	} >req
	run -0 pipe req
	assert_output ""
	run -0 answers out
	assert_equal "$output" "0 $(wc -c <m.rec)
0 $(wc -c <b.rec)
0 0
0 $(wc -c <g.rec)"
	cmp a0 m.rec
	cmp a1 b.rec
	cmp a3 g.rec
	spirt-store get grad/3/1 | cmp - g.rec
}

@test "pipe: a refused request is answered with its code and its message, the next one read; the store unchanged" {
	fixture
	spirt-store ls >before
	cp g.rec bad.rec
	"$PYTHON" -c 'import sys
b = bytearray(open("bad.rec", "rb").read()); b[-20] ^= 1
open("bad.rec", "wb").write(b)'
	{
		echo "get nope"
		echo "frob model/m@3"
		printf 'get a\tb\n'
		echo "batch 3 9 2 4 train"
		echo "batch 3 x 2 4 train"
		echo "batch 3 1 0 4 train"
		echo "batch 3 1 2 4 nods"
		head -c 2000 /dev/zero | tr '\0' a; echo
		echo "put grad/3/1 $(wc -c <bad.rec)"
		cat bad.rec
		echo "get model/m@3"
	} >req
	run -0 pipe req
	run -0 answers out
	assert_equal "$output" "66 0
64 0
64 0
64 0
64 0
64 0
66 0
64 0
65 0
0 $(wc -c <m.rec)"
	cmp a9 m.rec
	spirt-store ls | diff before -
	run -66 spirt-store get grad/3/1
}

@test "pipe: the messages, one line each, naming the request" {
	fixture
	{
		echo "get nope"
		echo "frob model/m@3"
		echo "batch 3 x 2 4 train"
		head -c 2000 /dev/zero | tr '\0' a; echo
	} >req
	run -0 pipe req
	assert_equal "$output" 'spirt-store: nope: no such key
spirt-store: pipe: "frob": expected get key, put key length or batch step worker batch seed dataset
spirt-store: pipe: batch: worker "x": not a number in 0..4294967294
spirt-store: pipe: request longer than 1023 bytes'
	# the last line's missing newline: answered 64, the end
	printf 'get model/m@3\nget model/m@3' >req
	run -0 pipe req
	assert_equal "$output" \
	    'spirt-store: pipe: no newline at the end of input'
	run -0 answers out
	assert_equal "$output" "0 $(wc -c <m.rec)
64 0"
}

@test "pipe: a put cut short ends it with 65, a malformed one with 64, nothing written; no store is 66" {
	fixture
	spirt-store ls >before
	n=$(wc -c <g.rec)
	{ echo "put grad/3/1 $((n + 10))"; cat g.rec; } >req
	run -65 pipe req
	assert_equal "$output" "spirt-store: grad/3/1: truncated record"
	run -0 answers out
	assert_equal "$output" "65 0"
	# the bytes after a bad length are no request: the get is not read
	{ echo "put grad/3/1 1x"; cat g.rec; echo "get model/m@3"; } >req
	run -64 pipe req
	run -0 answers out
	assert_equal "$output" "64 0"
	{ printf 'put grad/3/1\t%s\n' "$n"; cat g.rec; echo "get model/m@3"; } \
	    >req
	run -64 pipe req
	run -0 answers out
	assert_equal "$output" "64 0"
	spirt-store ls | diff before -
	run -66 spirt-store -s nowhere.db pipe </dev/null
	[ ! -e nowhere.db ]
	run -0 spirt-store pipe </dev/null
	assert_output ""
}

@test "pipe: each request reads the store as it is when the request comes" {
	fixture
	spirt-init -q -m other -S 7 -t 3 softmax:24:3
	spirt-store get model/other@3 >o.rec
	mkfifo in
	spirt-store pipe <in >out &
	pid=$!
	exec 5>in
	echo "get model/m@3" >&5
	want=$(( $(wc -c <m.rec) + $(printf '0 %d\n' "$(wc -c <m.rec)" |
	    wc -c) ))
	for _ in $(seq 100); do
		[ "$(wc -c <out)" -lt "$want" ] || break
		sleep 0.1
	done
	# another process writes between the two requests
	spirt-store put model/m@3 o.rec
	echo "get model/m@3" >&5
	exec 5>&-
	wait "$pid"
	run -0 answers out
	assert_equal "$output" "0 $(wc -c <m.rec)
0 $(wc -c <o.rec)"
	cmp a0 m.rec
	cmp a1 o.rec
}

# A pipe verifies a shard whole the first time and then only the samples a
# batch takes (batch.c).  shards8: 8 samples of 600 bytes in one shard,
# sample i all 11 + i (a block of its own); drv.py: a pipe started and
# batch(step) asking it for the 2 samples of (step, worker 0), samples(b)
# the samples an answer's x holds
shards8() {
	"$PYTHON" -c "
import numpy as np
np.save('X.npy', np.repeat(np.arange(11, 19, dtype=np.uint8), 600)
        .reshape(8, 600))
np.save('y.npy', np.arange(8, dtype=np.int32) % 2)"
	spirt-shard -q -n 1 X.npy y.npy
	cat >drv.py <<'PY'
import io, subprocess
import spirt_tensor as st
p = subprocess.Popen(["spirt-store", "pipe"], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE)


def batch(step):
    p.stdin.write(b"batch %d 0 2 0 train\n" % step)
    p.stdin.flush()
    code, n = p.stdout.readline().split()
    return int(code), p.stdout.read(int(n))


def samples(b):
    x = st.read_record(io.BytesIO(b)).array
    return sorted({int(round(v * 255)) - 11 for v in x.ravel()})
PY
}

# py: the script on stdin, drv.py importable, the store's file its argument
py() {
	PYTHONPATH="$SPIRT_ROOT/contrib/python:." "$PYTHON" - \
	    "$SPIRT_STORE/data.mdb"
}

# After that a byte changed in the store behind LMDB's back is refused,
# 65, by the next request that would serve it; a request whose samples
# are intact is still answered, with their bytes.
@test "pipe: a shard's bytes corrupted after it was served are refused when a batch would serve them, 65" {
	shards8
	run -0 py <<'PY'
import sys
from drv import p, batch, samples
c0, a0 = batch(0)
c1, a1 = batch(1)
assert c0 == 0 and c1 == 0, (c0, c1)
s0, s1 = samples(a0), samples(a1)
assert len(s0) == 2 and len(s1) == 2 and not set(s0) & set(s1), (s0, s1)
# one byte of a sample step 1 takes, wherever LMDB holds its bytes
db = open(sys.argv[1], "r+b")
img = db.read()
row = bytes([11 + s1[0]]) * 600
at = [i for i in range(len(img)) if img.startswith(row, i)]
assert at, "sample %d not found in the store" % s1[0]
for i in at:
    db.seek(i + 300)
    db.write(b"\0")
db.close()
c, b = batch(0)
print("step 0:", c, b == a0, flush=True)
c, b = batch(1)
print("step 1:", c, len(b), flush=True)
p.stdin.close()
sys.exit(p.wait())
PY
	assert_output "step 0: 0 True
spirt-store: data/train/0/x: payload checksum mismatch (corrupt, torn or interleaved)
step 1: 65 0"
	# a new pipe verifies the shard whole: it serves none of it
	run -0 --separate-stderr spirt-store pipe <<<"batch 0 0 2 0 train"
	assert_output "65 0"
	assert_equal "$stderr" "spirt-store: data/train/0/x: payload checksum mismatch (corrupt, torn or interleaved)"
}

# A shard rewritten (a valid record) while the pipe holds the hashes of the
# one before: its next batch serves the new bytes, verified anew.
@test "pipe: a shard rewritten after it was served: the next batch serves the new one" {
	shards8
	spirt-store get data/train/0/x >x.rec
	run -0 py <<'PY'
import subprocess, sys
import spirt_tensor as st
from drv import p, batch, samples
c, a = batch(0)
assert c == 0, c
r = st.read_record(open("x.rec", "rb"))
new = st.encode(r.array + 20, name=r.name, step=r.step)
subprocess.run(["spirt-store", "put", "data/train/0/x"], input=new,
               check=True)
c, b = batch(0)
print(c, [s - 20 for s in samples(b)] == samples(a))
p.stdin.close()
sys.exit(p.wait())
PY
	assert_output "0 True"
}

# putreq KEY [FIELD=VALUE...]: a putf32 request for g.rec's values and
# metadata, a field replaced (len, step, origin, samples, loss, rev,
# name, bytes: its values' bytes), to stdout
putreq() {
	"$PYTHON" -c "$PYREC"'
r = st.read_record(open("g.rec", "rb"))
f = dict(len=str(r.array.nbytes), step=str(r.step), origin=str(r.origin),
         samples=str(r.samples), loss=repr(r.loss),
         rev="-" if r.revision is None else str(r.revision), name=r.name)
b = r.array.astype("<f4").tobytes()
for a in sys.argv[2:]:
    k, v = a.split("=", 1)
    if k == "bytes":
        b = bytes.fromhex(v)
    else:
        f[k] = v
out(("putf32 %s %s %s %s %s %s %s %s\n" % (sys.argv[1], f["len"], f["step"],
     f["origin"], f["samples"], f["loss"], f["rev"], f["name"])).encode(), b)
' "$@"
}

@test "pipe: putf32 stores a float32 vector's bytes as the record spirt-grad writes, byte for byte" {
	fixture
	putreq grad/3/1 >req
	echo "get grad/3/1" >>req
	run -0 pipe req
	assert_output ""
	run -0 answers out
	assert_equal "$output" "0 0
0 $(wc -c <g.rec)"
	cmp a1 g.rec
	# no revision, a name with spaces, a negative loss
	putreq grad/3/2 rev=- "name=a b  c" loss=-1.5e-7 >req
	run -0 pipe req
	"$PYTHON" -c "$PYREC"'
r, g = st.read_record(sys.stdin.buffer), load("g.rec")
assert r.revision is None and r.name == "a b  c" and r.loss == -1.5e-7, r
assert (r.array == g["a"]).all() and r.step == 3 and r.origin == 1
' < <(spirt-store get grad/3/2)
}

@test "pipe: putf32 refuses a wrong length, a bad key or field with 64 and values not finite with 65, the next request read, nothing written" {
	fixture
	spirt-store ls >before
	n=$(wc -c <g.rec)
	{
		putreq grad/3/1 len=299 bytes="$(printf "00%.0s" {1..299})"
		printf 'putf32 a\tb 4 3 1 2 0.5 - x\n\0\0\0\0'
		putreq grad/3/1 step=x
		putreq grad/3/1 origin=4294967295
		putreq grad/3/1 loss=nan
		putreq grad/3/1 rev=-1
		putreq grad/3/1 name="$(head -c 256 /dev/zero | tr '\0' n)"
		putreq grad/3/1 len=8 bytes=0000803f0000c07f
		putreq grad/3/1 len=8 bytes=0000803f0000807f
		echo "get model/m@3"
	} >req
	run -0 pipe req
	assert_equal "$output" 'spirt-store: pipe: putf32 grad/3/1: invalid length
spirt-store: pipe: putf32 a	b: invalid key
spirt-store: pipe: putf32 grad/3/1: invalid step
spirt-store: pipe: putf32 grad/3/1: invalid origin
spirt-store: pipe: putf32 grad/3/1: invalid loss
spirt-store: pipe: putf32 grad/3/1: invalid revision
spirt-store: pipe: putf32 grad/3/1: invalid name
spirt-store: pipe: putf32 grad/3/1: values not finite
spirt-store: pipe: putf32 grad/3/1: values not finite'
	run -0 answers out
	assert_equal "$output" "64 0
64 0
64 0
64 0
64 0
64 0
64 0
65 0
65 0
0 $(wc -c <m.rec)"
	cmp a9 m.rec
	# a length that is no number, or a request short of its fields: the
	# bytes after it are no request, the pipe ends with 64
	{ putreq grad/3/1 len=1x; echo "get model/m@3"; } >req
	run -64 pipe req
	run -0 answers out
	assert_equal "$output" "64 0"
	{ echo "putf32 grad/3/1 4 3 1 2 0.5 -"; echo "get model/m@3"; } >req
	run -64 pipe req
	run -0 answers out
	assert_equal "$output" "64 0"
	# cut short: 65, the end
	{ putreq grad/3/1 len=400; } >req
	run -65 pipe req
	assert_equal "$output" "spirt-store: grad/3/1: truncated record"
	spirt-store ls | diff before -
	run -66 spirt-store get grad/3/1
}
