#!/bin/sh
# tests/fuzz/mkseeds.sh - make the seed corpora of tests/fuzz/corpus/ with
# the tools themselves (after `make all`): records from spirt-init,
# spirt-shard and spirt-grad, .npy from spirt-store export, keys from a
# real store, key, token and allowlist files from spirt-key keygen and
# invite, handshake messages a real client sent and a real server
# answered, data cut from Fashion-MNIST and LIBSVM's heart_scale.  Each
# seed is an input its harness takes: the option bytes a harness reads
# first (see each tests/fuzz/fuzz_*.c) are put in front.  The keys are
# throwaway ones, made for the seeds.
#
#   sh tests/fuzz/mkseeds.sh        rewrites tests/fuzz/corpus/
set -eu
cd "$(dirname "$0")/../.."
root=$(pwd)
out=$root/tests/fuzz/corpus
PATH="$root:$PATH"
PYTHON=${PYTHON:-/usr/bin/python3}
FMNIST=${FMNIST:-/usr/share/datasets/fashion-mnist}
HEART=/usr/share/doc/liblinear-tools/examples/heart_scale
for t in spirt-init spirt-shard spirt-grad spirt-agg spirt-update \
    spirt-store spirt-peer spirt-beat; do
	[ -x "$root/$t" ] || { echo "mkseeds: $t: run make all first" >&2
		exit 69; }
done
tmp=$(mktemp -d)
srv=
trap 'if [ -n "$srv" ]; then kill "$srv" 2>/dev/null; fi; rm -rf "$tmp"' \
    EXIT
rm -rf "$out"
mkdir -p "$out"
cd "$tmp"
export SPIRT_STORE="$tmp/spirt.db"

# seed TARGET NAME: stdin is the seed
seed() {
	mkdir -p "$out/$1"
	cat >"$out/$1/$2"
}
# bytes: octal escapes for printf, from the arguments' numbers (0..255)
bytes() {
	for b in "$@"; do printf "\\$(printf %03o "$b")"; done
}
# le16 N: N as two little-endian bytes
le16() {
	bytes $(($1 & 255)) $(($1 >> 8 & 255))
}
# unhex: hex digits on stdin to bytes
unhex() {
	"$PYTHON" -c 'import sys; sys.stdout.buffer.write(bytes.fromhex(sys.stdin.read().strip()))'
}

# ---- data: CSV, LIBSVM, IDX, and the stores they make ----
awk 'BEGIN { for (i = 0; i < 6; i++)
	printf "%d,%.3f,%.3f,%.3f\n", i % 3, (i % 7) / 7, (i % 5) / 5,
	    (i % 3) / 3 }' >small.csv
{ echo "label,a,b,c"; cat small.csv; } >header.csv
awk -F, '{ print $2 "," $3 "," $4 "," $1 }' small.csv >last.csv
printf '1,2.5e3,-0.5,.25\r\n0,1e-3,+7,3\r\n' >crlf.csv
spirt-shard -q -o /dev/null small.csv
spirt-shard -q -H -o /dev/null header.csv
spirt-shard -q --label-col last -o /dev/null last.csv
spirt-shard -q -o /dev/null crlf.csv
{ bytes 0 0 0; cat small.csv; } | seed csv small
{ bytes 1 0 0; cat header.csv; } | seed csv header
{ bytes 2 0 0; cat last.csv; } | seed csv label-last
{ bytes 24 3 3; cat small.csv; } | seed csv classes-dim
{ bytes 0 0 0; cat crlf.csv; } | seed csv crlf
{ bytes 0 0 0; gzip -nc small.csv; } | seed csv gzip

head -n 6 "$HEART" | sed 's/^+1/1/; s/^-1/0/' >heart.svm
spirt-shard -q -o /dev/null heart.svm
{ bytes 0 0 0; cat heart.svm; } | seed libsvm heart
{ bytes 0 0 0; head -n 3 "$HEART"; } | seed libsvm heart-signed
{ bytes 16 0 20; printf '# a comment\n1 3:0.5 7:1e-2 # tail\n0\n'; } |
    seed libsvm dim-comment
{ bytes 0 0 0; gzip -nc heart.svm; } | seed libsvm gzip

# IDX: the first items of Fashion-MNIST's test set, count rewritten
"$PYTHON" - "$FMNIST" <<'EOF'
import gzip, struct, sys
d = sys.argv[1]
im = gzip.open(d + '/t10k-images-idx3-ubyte.gz').read(16 + 3 * 784)
lb = gzip.open(d + '/t10k-labels-idx1-ubyte.gz').read(8 + 3)
for n in (1, 3):
    i = im[:4] + struct.pack('>I', n) + im[8:16] + im[16:16 + n * 784]
    l = lb[:4] + struct.pack('>I', n) + lb[8:8 + n]
    open('im%d' % n, 'wb').write(i)
    open('lb%d' % n, 'wb').write(l)
# other element types: rank 2 float images, i32 labels
f = struct.pack('>BBBBII', 0, 0, 0x0d, 2, 2, 3) + struct.pack('>6f',
    0.5, -1, 2, 0, 1e3, 3)
open('imf', 'wb').write(f)
open('lbi', 'wb').write(struct.pack('>BBBBI', 0, 0, 0x0c, 1, 2) +
    struct.pack('>2i', 1, 0))
EOF
spirt-shard -q -o /dev/null im3 lb3
for p in im1:lb1 im3:lb3 imf:lbi; do
	i=${p%%:*} l=${p#*:}
	{ le16 "$(wc -c <"$i")"; cat "$i" "$l"; } | seed idx "$i-$l"
done
gzip -nc im1 >im1.gz
gzip -nc lb1 >lb1.gz
{ le16 "$(wc -c <im1.gz)"; cat im1.gz lb1.gz; } | seed idx gzip

# records: a model file (model and state), a data file, a gradient, the
# aggregate and the updated model, u8/i32/i64/f32 payloads
spirt-shard -q -n 2 small.csv
spirt-init -q -m m mlp:3-2-3
spirt-init -q -m m -o model.rec mlp:3-2-3
spirt-grad -m m -t 0 -w 0 -b 2 -o grad.rec
spirt-grad -m m -t 0 -w 0 -b 2 -o - | spirt-store put grad/0/0
spirt-agg -q -t 0
spirt-update -q -m m -t 0 -r 0.1
spirt-update -q -m m -t 1 -r 0.1 -o model2.rec 2>/dev/null ||
	cp model.rec model2.rec
spirt-shard -q -o data.rec small.csv
spirt-shard -q -o idxdata.rec im1 lb1
for f in model.rec model2.rec grad.rec data.rec idxdata.rec; do
	seed record "${f%.rec}" <"$f"
done
# ---- a gradient slot (fuzz_slot.c): the worker byte, then the file as
# spirt-grad to=slot writes it, its boot id cleared (the fuzzers' build
# reads an empty one); cut short; without its magic ----
printf '0 1 to=slot\n' | spirt-grad -q -i -m m -b 2 >/dev/null
"$PYTHON" - "$SPIRT_STORE/scratch/slot.1" "$out/slot" <<'PY'
import os, sys
b = bytearray(open(sys.argv[1], 'rb').read())
b[64:112] = bytes(48)
os.makedirs(sys.argv[2], exist_ok=True)
for name, v in (('grad', b), ('short', b[:4100]),
                ('nomagic', bytes(8) + b[8:])):
    open(os.path.join(sys.argv[2], name), 'wb').write(bytes([1]) + v)
PY
spirt-store get -f agg/0 | seed record agg
spirt-store get -f data/train/assign | seed record assign
spirt-store get -f data/train/info | seed record info
# a gradient of an assignment revision (spirt-tensor(5) version 2, its
# revision field), in a store of its own: the one above stays revision 0
(
	export SPIRT_STORE="$tmp/rev.db"
	spirt-shard -q -n 2 small.csv
	spirt-init -q -m m -t 2 mlp:3-2-3
	spirt-shard -q --live 0 -t 1
	spirt-grad -m m -t 2 -w 0 -b 2 -o grad-rev.rec
)
seed record grad-rev <grad-rev.rec

# .npy: what spirt-store export writes, of each dtype it has
spirt-store export -f model/m@0 m.npy
spirt-store export -f data/train/0/y y.npy
spirt-store export -f data/train/info info.npy
spirt-shard -q -d im -o /dev/null im1 lb1
spirt-shard -q -d im im1 lb1
spirt-store export -f data/im/0/x x.npy
for f in m y info x; do seed npy "$f" <"$f.npy"; done

# NumPy data sets as numpy writes them (spirt-shard X.npy y.npy, a.npz):
# a byte of options first (bit 0: a pair, its samples' length in the two
# bytes after; fuzz_npz.c), then the files
"$PYTHON" - "$out/npz" <<'EOF'
import io, os, struct, sys
import numpy as np
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
X = np.arange(12, dtype=np.float32).reshape(4, 3) / 7
y = np.array([0, 1, 2, 1], dtype=np.int16)
def npy(a):
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()
def npz(f, **k):
    b = io.BytesIO()
    f(b, **k)
    return b.getvalue()
def pair(x, y):
    return b'\x01' + struct.pack('<H', len(npy(x))) + b'\0\0' + npy(x) + npy(y)
seeds = {
    'pair': pair(X, y),
    'pair-u8': pair(X.astype(np.uint8), y.astype(np.uint64)),
    'stored': b'\0\0\0\0\0' + npz(np.savez, X=X, y=y),
    'deflated': b'\0\0\0\0\0' + npz(np.savez_compressed, x=X, y=y),
    'named': b'\x08\0\0\0\0' + npz(np.savez, a=X.astype(np.float64), b=y),
}
for name, data in seeds.items():
    open(os.path.join(out, name), 'wb').write(data)
EOF

# store keys, as a real store holds them
spirt-store ls | while read -r k rest; do
	printf %s "$k" | seed storekey "$(printf %s "$k" | tr '/@' '__')"
done
for k in xagg/3/p1 gagg/3 gagg/3/round digest/3/p2 beat/f1 opt/m@1 mom/3/1 \
    mstate/m@1 state/3/1 \
    agg/3/excluded data/d/scale data/d/classes health/p1; do
	printf %s "$k" | seed storekey "$(printf %s "$k" | tr '/@' '__')"
done

# ---- option values and the peers file (fuzz_parse: the parser byte) ----
for v in 0:42 0:18446744073709551615 8:1000 1:64M 1:2GiB 1:4096 2:-12 \
    3:0.25 3:1e-3 4:250ms 4:2m 4:1.5h; do
	{ bytes "${v%%:*}"; printf %s "${v#*:}"; } |
	    seed parse "$(printf %s "$v" | tr ':.' '__')"
done
{ bytes 5; printf '# the members\np1 /var/spirt/p1\np2 http://p2@127.0.0.1:7070\n'
  printf '\n  p3\thttp://10.0.0.3:7070  \n'; } | seed parse peers

# ---- the warm protocol: the tool byte, then request lines ----
{ bytes 0; printf '0\n1 3\n18446744073709551613 4294967293\n'; } |
    seed serve grad
{ bytes 1; printf '0\n7\n'; } | seed serve agg
{ bytes 2; printf '18446744073709551612\n'; } | seed serve update
{ bytes 3; printf '999 7\n1000\n01\n 1\n1x\n'; } | seed serve bounds

# ---- FaaS requests, as contrib/faas's runners deliver them ----
str() {
	le16 "$(printf %s "$1" | wc -c)"
	printf %s "$1"
}
{ bytes 0; str GET; str /grad/3/1; str model=m; str ''; } | seed faas cgi-path
{ bytes 0; str POST; str /; str ''; str ''; printf 'step=3&worker=1'; } |
    seed faas cgi-form
{ bytes 0; str ''; str ''; str ''; str '{"step":3,"worker":"1"}'; } |
    seed faas cgi-arg
{ bytes 1; printf 'step=2&worker=%%31&model=mlp+x'; } | seed faas query
{ bytes 2; printf '{"step":4,"worker":0,"model":"m"}'; } | seed faas json
{ bytes 3; printf '{"value":{"step":"5","worker":2},"activation":"x"}'; } |
    seed faas openwhisk
{ bytes 4; printf '{"rawPath":"/","queryStringParameters":{"step":"1","worker":"0"},"isBase64Encoded":false,"headers":{"a":[1,2.5e3,null,true]}}'; } |
    seed faas lambda-url

# ---- keys, tokens, allowlists: spirt-key keygen and invite ----
umask 077
spirt-key keygen -p group.pub group.key >/dev/null
# (f1.*: the function of p1's worker 1, its id p1.w1 its binding)
for m in p1:peer:p1 p2:peer:p2 f1:function:p1.w1; do
	f=${m%%:*} r=${m#*:} r=${r%%:*}
	spirt-key keygen "$f.key" >"$f.hex"
	spirt-key invite -o "$f.tok" -R "$r" -g group.key -i "${m##*:}" \
	    -r r1 "$(cat "$f.hex")"
done
{ bytes 0; cat p1.key; } | seed keyfile secret
{ bytes 8; cat p1.key; } | seed keyfile secret-0640
{ bytes 1; cat group.pub; } | seed keyfile public
{ bytes 2; cat p1.hex | tr -d '\n'; } | seed keyfile hex
{ bytes 0 0 128; cat f1.tok; } | seed token file
{ bytes 1 0 128; sed -n 's/^TOKEN=//p' p2.tok | unhex; } | seed token raw
{ bytes 2 2 128; sed -n 's/^TOKEN=//p' f1.tok | unhex; } | seed token resigned
{ printf 'VERSION=1\nTYPE=spirt-allowlist\n# the peers\n'
  printf 'MEMBER=%s peer p2\n' "$(cat p2.hex)"
  printf 'MEMBER=%s function f1\n' "$(cat f1.hex)"
  printf 'END\n'; } | seed allow members
printf 'VERSION=1\nTYPE=spirt-allowlist\nEND\n' | seed allow empty

# ---- handshakes: what spirt-store -s sends, what spirt-peer serve says ----
# a listener that keeps the first request's body and answers 503
cat >capture.py <<'EOF'
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', 0))
s.listen(1)
print(s.getsockname()[1], flush=True)
s.settimeout(30)
c, _ = s.accept()
c.settimeout(30)
data = b''
while b'\r\n\r\n' not in data:
    data += c.recv(65536)
head, body = data.split(b'\r\n\r\n', 1)
n = [int(l.split(b':')[1]) for l in head.split(b'\r\n')
     if l.lower().startswith(b'content-length:')][0]
while len(body) < n:
    body += c.recv(65536)
open(sys.argv[1], 'wb').write(body)
c.sendall(b'HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n')
c.close()
EOF
# m1 FILE MEMBER: the first message member sends to p1
m1() {
	mkfifo port.fifo
	"$PYTHON" capture.py "$1" >port.fifo &
	cap=$!
	read -r port <port.fifo
	rm -f port.fifo
	SPIRT_KEY=$2.key SPIRT_TOKEN=$2.tok SPIRT_GROUP=group.pub \
	    SPIRT_TIMEOUT=5000 spirt-store -s "http://p1@127.0.0.1:$port" \
	    ls >/dev/null 2>&1 || true
	wait "$cap"
}
m1 m1-f1 f1
m1 m1-p2 p2
# and p1's answer to a fresh one: the session id, then m2
mkfifo ready
SPIRT_STORE="$tmp/spirt.db" spirt-peer serve -q -k p1.key -T p1.tok \
    -g group.pub -l 127.0.0.1:0 -F 3 3>ready &
srv=$!
read -r addr <ready
m1 m1-fresh f1
curl -s --max-time 10 --data-binary @m1-fresh -o hs-answer \
    "http://$addr/v1/hs"
kill "$srv"
wait "$srv" || true
srv=
# mode, clock (0x80: now), message
{ bytes 0 128; cat m1-f1; } | seed hs raw-f1
{ bytes 197 128; cat m1-f1; } | seed hs signed-f1
{ bytes 192 128; cat m1-p2; } | seed hs signed-p2-token
{ bytes 198 128; tail -c +17 hs-answer; } | seed hs answer
{ bytes 3 128; bytes 20 0 1 200 0 128; } | seed hs inflight
{ bytes 11 128; bytes 100 1 4; } | seed hs inflight-answer

# ---- sealed messages: programs of fuzz_msg.c ----
# seal (op 0: step 7, key 0, 8 bytes), deliver it (1), replay it (1),
# change a byte (2), another step (3), raw bytes (4: the real m1)
{ bytes 0 7 0 4; printf 'payload!'; bytes 1 0 1 0 2 0 130 0 1 3 0 1
  bytes 4; le16 "$(wc -c <m1-f1)"; cat m1-f1; } | seed msg program
# many sealed unseen (op 5), then the oldest delivered: too old
{ bytes 0 1 1 0 5 1 2 0 255 5 1 2 0 255 5 1 2 0 255 5 1 2 0 255
  bytes 5 1 2 0 255 5 1 2 0 255 5 1 2 0 255 5 1 2 0 255 1 0; } |
    seed msg window
{ bytes 0 3 4 1; printf 'hi'; bytes 0 3 5 0 1 1 1 0; } | seed msg list-keys
# a stream of 2 frames (op 6: 20480 x 4 bytes of "abcd"), delivered
# frame by frame (1), cut short (7), then a 1-frame one delivered whole
{ bytes 6 7 0 0 80 4; printf abcd; bytes 1 0 1 1 0 0 7 0 1 7 0 0
  bytes 6 1 1 32 0 0 1 1 0; } | seed msg streams

# ---- digests a peer signs: a real exchange between two local stores ----
for p in p1 p2; do
	mkdir -p "$p"
	(cd "$p" && SPIRT_STORE="$tmp/$p/spirt.db" &&
	    export SPIRT_STORE &&
	    spirt-shard -q -n 2 ../small.csv &&
	    spirt-init -q -m m mlp:3-2-3 &&
	    spirt-grad -m m -t 0 -w 0 -b 2 -o - |
	    spirt-store put grad/0/0 &&
	    spirt-agg -q -t 0)
done
printf 'p1 %s\np2 %s\n' "$tmp/p1/spirt.db" "$tmp/p2/spirt.db" >peers
for p in p1 p2; do
	SPIRT_KEY=$p.key SPIRT_TOKEN=$p.tok SPIRT_GROUP=group.pub \
	    spirt-peer exchange -q -s "$tmp/$p/spirt.db" -m m -P peers \
	    --min-peers 1 -t 0 >/dev/null 2>&1 &
done
wait
for p in p1 p2; do
	# the digest is the payload of the u8 record the store holds
	if SPIRT_STORE="$tmp/$p/spirt.db" spirt-store get -f "digest/0/$p" \
	    >dg.rec 2>/dev/null; then
		"$PYTHON" -c 'import struct, sys
r = open(sys.argv[1], "rb").read()
h, = struct.unpack_from("<I", r, 8)
n, = struct.unpack_from("<Q", r, 48)
sys.stdout.buffer.write(r[h:h + n])' dg.rec >dg
		{ bytes 0; cat dg; } | seed digest "$p"
		{ bytes 9; cat dg; } | seed digest "$p-resigned"
	fi
done

# ---- the partitioned exchange's records: the same two stores, --parts
# at step 0 of a copy (fuzz_xpart.c: mode byte, n (7 bytes), parts - 1,
# then the record) ----
for p in p1 p2; do
	rm -rf "$tmp/x$p"
	cp -r "$tmp/$p" "$tmp/x$p"
	# (the all-to-all round above is step 0's: without its gagg/0 and
	# digests the copy's step 0 is not exchanged yet)
	SPIRT_STORE="$tmp/x$p/spirt.db" spirt-store rm gagg/0 gagg/0/round \
	    gagg/0/excluded digest/0/p1 digest/0/p2
done
printf 'p1 %s\np2 %s\n' "$tmp/xp1/spirt.db" "$tmp/xp2/spirt.db" >xpeers
for p in p1 p2; do
	SPIRT_KEY=$p.key SPIRT_TOKEN=$p.tok SPIRT_GROUP=group.pub \
	    spirt-peer exchange -q -s "$tmp/x$p/spirt.db" -m m -P xpeers \
	    --parts -t 0 >/dev/null 2>&1 &
done
wait
for p in p1 p2; do
	for k in xslice/0:inputs xpart/0/signed:result; do
		SPIRT_STORE="$tmp/x$p/spirt.db" spirt-store get -f "${k%:*}" \
		    >xr.rec 2>/dev/null || continue
		"$PYTHON" -c 'import struct, sys
r = open(sys.argv[1], "rb").read()
h, = struct.unpack_from("<I", r, 8)
n, = struct.unpack_from("<Q", r, 48)
sys.stdout.buffer.write(r[h:h + n])' xr.rec >xr
		{ bytes 0 0 0 0 0 0 3 233 2; cat xr; } |
		    seed xpart "$p-${k#*:}"
		{ bytes 9 0 0 0 0 0 0 25 0; cat xr; } |
		    seed xpart "$p-${k#*:}-resigned"
	done
	# its slices as served (mode 0x30: the root of its input record,
	# the part, parts - 1, the value with its path)
	SPIRT_STORE="$tmp/x$p/spirt.db" spirt-store get -f xslice/0 >xr.rec \
	    2>/dev/null || continue
	for k in 0 1; do
		SPIRT_STORE="$tmp/x$p/spirt.db" spirt-store get -f \
		    "xslice/0/p$((k + 1))" >xs.rec 2>/dev/null || continue
		{ bytes 48 0 0 0 0 0 0 0 0
		  "$PYTHON" -c 'import struct, sys
r = open(sys.argv[1], "rb").read()
h, = struct.unpack_from("<I", r, 8)
sys.stdout.buffer.write(r[h + 224:h + 256])' xr.rec
		  bytes "$k" 1; cat xs.rec; } | seed xpart "$p-slice$k"
	done
done

# ---- the client of a peer: programs of fuzz_remote.c (pin byte, then
# per operation: op, key; per request the client makes: p1's answer mode,
# its piece size) ----
# pinned; get model/m@0 honestly (handshake, message) in one piece, then
# model/m@1 in 200-byte pieces, a listing of model/, a put (refused)
{ bytes 1  0 0 0 0 0 0  0 1 0 200  2 0 0 0  3 0 0 0; } | seed remote honest
# unpinned: /v1/id first; a changed byte (1), a cut (2), raw bytes (3),
# sealed lies (4), a transfer error (5), a lying length (6)
{ bytes 0  0 0 0 0 0 0 0 0  0 4 1 7 0 1 0  2 1 2 5 0 1 0  0 2 3 1 0
  bytes 0 0 4 3 40 0; printf 'x%.0s' $(seq 40)
  bytes 0 3 5 0 0  2 3 6 0 1 0; } | seed remote malice

# ---- the peer server: programs of fuzz_peersrv.c ----
# handshake as f1 (op 0, x = 1 << 2: member f1 in slot 0), then sealed
# requests in slot 0: get model/m@0 (op 1), put grad/3/2, list model/*,
# a role refusal (get xagg/0/p1), then a replay (3) and a changed one (4)
{ bytes 0 4
  bytes 1 0 1 0 0 0
  bytes 1 0 2 5 5 0; printf 'grad!'
  bytes 1 0 4 13 0 0
  bytes 1 0 1 7 0 0
  bytes 3 4 0 0 7; } | seed peersrv function
# p2 (a peer) lists everything, pieces of 3 bytes, and gets a digest
{ bytes 0 0; bytes 1 0 132 16 0 0 2; bytes 1 0 1 8 0 0; } |
    seed peersrv peer
# raw requests: GET /v1/id, POST /v1/msg with a junk session, an empty
# handshake, a body over the limit
{ bytes 2 0 0 0 0; bytes 2 2 1 5; printf 'zzzzz'; bytes 4 0
  bytes 2 1 0 0 0; bytes 5 9 0; } | seed peersrv raw
# an outsider's handshake (slot 0, x >> 2 = 4), p3 and f2 from the
# allowlist
{ bytes 0 16 0 9 0 13; bytes 1 1 1 0 0 0; } | seed peersrv allowlist

# ---- the assignment: programs of fuzz_assign.c (set-up bytes, then the
# rows of data/train/assign as spirt-shard wrote them: 8-byte fields,
# mode 2; one byte each, mode 0; version 1's 4 columns, mode 1+2) ----
(
	export SPIRT_STORE="$tmp/assign.db"
	awk 'BEGIN { for (i = 0; i < 24; i++)
		printf "%d,%.3f,%.3f\n", i % 3, (i % 7) / 7, (i % 5) / 5 }' \
	    >as.csv
	# 4 shards of 6: revision 0; worker 3 gone at epoch 0 step 1
	# (batch 2, 3 steps an epoch: a rest part); worker 2 too at step 4
	spirt-shard -q -n 4 as.csv
	spirt-store get -f data/train/assign >as0.rec
	spirt-shard -q --live 0,1,2 -t 1 -b 2
	spirt-store get -f data/train/assign >as1.rec
	spirt-shard -q --dead 2 -t 4 -b 2
	spirt-store get -f data/train/assign >as2.rec
)
# set-up: 4 shards of 6, group 0, the live mask, worker, step, S 3,
# batch 2, j, revision, mode; then the record's payload
"$PYTHON" - "$out/assign" as0.rec as1.rec as2.rec <<'EOF'
import os, struct, sys
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
def rows(path):
    d = open(path, 'rb').read()
    rank, = struct.unpack_from('<B', d, 7)
    dims = struct.unpack_from('<%dQ' % rank, d, 56)
    n = dims[0] * dims[1]
    return [list(struct.unpack_from('<%dq' % dims[1], d,
                                    len(d) - 16 - 8 * n + 8 * dims[1] * i))
            for i in range(dims[0])]
def seed(name, live, worker, step, j, rev, mode, rs):
    b = bytes([3, 6, 6, 6, 6, 0, live, worker, step & 255, step >> 8, 2,
               1, j, rev, mode])
    for r in rs:
        if mode & 1:
            r = r[:4]
        for v in r:
            b += struct.pack('<q', v) if mode & 2 else bytes([v & 255])
    open(os.path.join(out, name), 'wb').write(b)
r0, r1, r2 = (rows(p) for p in sys.argv[2:5])
seed('rev0', 15, 1, 0, 0, 0, 2, r0)
seed('rev0-v1', 15, 2, 4, 0, 0, 3, r0)
seed('rev1-rest', 7, 0, 1, 1, 1, 2, r1)
seed('rev1-bytes', 7, 2, 2, 1, 1, 0, r1)
seed('rev2', 3, 1, 4, 2, 2, 2, r2)
seed('rev2-bytes', 3, 0, 7, 0, 2, 0, r2)
EOF

# ---- beats and health: what spirt-beat puts and its watcher writes
# (fuzz_beat.c: a mode byte, then text, or a stored record with bit 1) ----
(
	export SPIRT_STORE="$tmp/beat.db"
	spirt-init -q -m m mlp:3-2-3
	spirt-beat -q -B 100 -c 1 -t 7 beat p1
	spirt-beat -q -B 100 -c 1 -R function --status catchup beat f1
	spirt-beat -q -B 100 -c 1 watch
	spirt-store get -f beat/p1 >beat-p1.rec
	spirt-store get -f beat/f1 >beat-f1.rec
	spirt-store get -f health/p1 >health-p1.rec
)
"$PYTHON" - "$out/beat" beat-p1.rec beat-f1.rec health-p1.rec <<'EOF'
import os, struct, sys
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
def text(path):
    d = open(path, 'rb').read()
    return d[struct.unpack_from('<I', d, 8)[0]:-16]
for mode, name, path in ((0, 'beat-p1', 2), (0, 'beat-f1', 3),
                         (1, 'health-p1', 4)):
    open(os.path.join(out, name), 'wb').write(
        bytes([mode]) + text(sys.argv[path]))
open(os.path.join(out, 'record-p1'), 'wb').write(
    bytes([2]) + open(sys.argv[2], 'rb').read())
EOF

# ---- a round's record (fuzz_round.c): gagg/<t>/round as lib/xrec.c
# writes it, without and with beats, and with the decision's state ----
printf 'VERSION=1\nTYPE=spirt-round\nstep=4\nrule=mean\npeer=p2 self\npeer=p1 used\npeer=p3 late: xagg/4/p3: peer did not answer in time\nxms=12.5\nEND\n' |
    seed round plain
g=$(printf '%064d' 0 | tr 0 7)
printf 'VERSION=1\nTYPE=spirt-round\nstep=9\nrule=median\npeer=p1 out\npeer=p2 used\npeer=p3 used\nxms=3.0\nquorum=changed\nadopted=p2\ngagg=%s\nEND\n' "$g" |
    seed round beats
printf 'VERSION=1\nTYPE=spirt-round\nstep=9\nrule=mean\npeer=p1 self\npeer=p2 refused: gagg/9/p2: not a round record\nxms=0.0\nquorum=reused\ngagg=%s\nstate=decided\nEND\n' "$g" |
    seed round decided

n=$(find "$out" -type f | wc -l)
b=$(du -sk "$out" | cut -f1)
echo "mkseeds: $n seeds, $b KiB, in tests/fuzz/corpus/"
