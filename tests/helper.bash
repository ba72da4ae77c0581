# tests/helper.bash - common set-up for the bats CLI tests
bats_require_minimum_version 1.5.0
# Debian 12's bats (1.8.2) compares versions in bats_version_lt with a
# global i, which every `run -N` (a flag) calls: a test's own $i after
# such a run was 2, not its loop's value, and checks in a loop over i
# checked one store three times.  The same function with its i local
declare -f bats_version_lt >/dev/null &&
    eval "$(declare -f bats_version_lt | sed '2a local i;')"

load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

SPIRT_ROOT=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
PATH="$SPIRT_ROOT:$PATH"
# Debian's python3 (with python3-numpy), never a user's pyenv or venv one
PYTHON=${PYTHON:-/usr/bin/python3}
DATA="$SPIRT_ROOT/tests/data"
FMNIST=${FMNIST:-/usr/share/datasets/fashion-mnist}
export PATH PYTHON
# Python as a fresh machine runs it: stdout to a pipe block-buffered, so a
# test that mixes a script's stdout with a tool's stderr must flush (an
# inherited PYTHONUNBUFFERED=1 hid that here and CI's fresh root found it)
unset PYTHONUNBUFFERED

# A Python prelude over the reference record reader and writer,
# contrib/python/spirt_tensor.py: st.encode() makes a record, out() writes
# records to stdout, load() reads a file's first record as a dict.
PYREC="
import sys
import numpy as np
sys.path.insert(0, '$SPIRT_ROOT/contrib/python')
import spirt_tensor as st
def out(*r):
    for x in r: sys.stdout.buffer.write(x)
def load(path):
    r = st.read_record(open(path, 'rb'))
    return dict(a=r.array, step=r.step, samples=r.samples, loss=r.loss,
                count=r.count, name=r.name)
"

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
	export SPIRT_STORE="$BATS_TEST_TMPDIR/spirt.db"
	# (what the tools make in TMPDIR goes with the test, even when the
	# test kills a driver's whole session and nothing of it can clean up)
	export TMPDIR="$BATS_TEST_TMPDIR"
	unset SPIRT_MAPSIZE SPIRT_MAPSIZE_MAX
}

# store_digest STORE: one line per key with a hash of its value, to show a
# failed command changed nothing ("nothing written to the store")
store_digest() {
	local d s=
	d=$(mdb_dump "$1") || { echo "store_digest: cannot dump $1" >&2; return 1; }
	[ -n "$d" ] || return 1
	# gradients and aggregates live in the scratch environment
	if [ -e "$1/scratch/data.mdb" ]; then
		s=$(mdb_dump "$1/scratch") ||
			{ echo "store_digest: cannot dump $1/scratch" >&2; return 1; }
	fi
	printf '%s\n%s\n' "$d" "$s" | md5sum
}

# caught PID SIG: process PID has a handler for signal number SIG.
# PID must be a program started with `prog &`: between its fork and
# its exec it is still this shell, whose handlers (bats catches SIGTERM)
# it shows; a SIGTERM sent then killed the program before it set its
# own (CI, tests/56-failures, "stopped ... failed with status 143").
caught() {
	local m
	[ "$(readlink "/proc/$1/exe" 2>/dev/null)" != "$(readlink /proc/$$/exe)" ] ||
	    return 1
	m=$(sed -n 's/^SigCgt:[[:space:]]*//p' "/proc/$1/status" 2>/dev/null)
	[ -n "$m" ] && [ $(( (0x$m >> ($2 - 1)) & 1 )) -eq 1 ]
}

# model_hashes STORE T: the model@T hash in each digest/T/<id> of STORE
# (bytes 152..183 of a signed digest, docs/protocol.md)
model_hashes() {
	local k
	for k in $(spirt-store -s "$1" ls "digest/$2/" | cut -f1); do
		spirt-store -s "$1" get "$k" >dg.rec
		"$PYTHON" -c "$PYREC
b = bytes(load('dg.rec')['a'])
assert b[:4] == b'SPDG'
print(b[152:184].hex())"
	done
}

# mute_start: a TCP server on 127.0.0.1 that accepts and never answers
# (at most 60 s); its pid in MUTE (the test's teardown kills it), its port
# in MUTE_PORT
mute_start() {
	mkfifo mute
	timeout 60 "$PYTHON" -c 'import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
open(sys.argv[1], "w").write("%d\n" % s.getsockname()[1])
held = []
while True: held.append(s.accept())' mute &
	MUTE=$!
	read -r -t 30 MUTE_PORT <mute
}

# smalldata DIR: a small IDX data set like Fashion-MNIST's files in DIR
# (once): 1200 training images of 28x28 in 10 classes (a bright block whose
# place is the class) and a test set of 200; for 3 peers of 2 functions,
# 6 shards of 200: an epoch of 10 steps of batch 20
smalldata() {
	[ -s "$1/t10k-labels-idx1-ubyte.gz" ] && return 0
	mkdir -p "$1"
	"$PYTHON" - "$1" <<'PY'
import gzip, os, random, struct, sys
random.seed(1)
def write(name, n):
    labels = [i % 10 for i in range(n)]
    img = bytearray()
    for c in labels:
        px = bytearray(random.randrange(40) for _ in range(784))
        r0, c0 = (c // 5) * 10 + 3, (c % 5) * 5 + 1
        for r in range(r0, r0 + 5):
            for q in range(c0, c0 + 4):
                px[r * 28 + q] = 200 + random.randrange(55)
        img += px
    d = sys.argv[1]
    with gzip.open(os.path.join(d, "%s-images-idx3-ubyte.gz" % name), "wb") as f:
        f.write(struct.pack(">IIII", 0x803, n, 28, 28) + bytes(img))
    with gzip.open(os.path.join(d, "%s-labels-idx1-ubyte.gz" % name), "wb") as f:
        f.write(struct.pack(">II", 0x801, n) + bytes(labels))
write("train", 1200)
write("t10k", 200)
PY
}

# numpy_set: 300 samples of 4 features in 3 classes (the largest of the
# first three), made by NumPy: x.npy y.npy the training set (240), t.npz
# (x and y) the test set (60)
numpy_set() {
	"$PYTHON" -c 'import numpy as np
r = np.random.default_rng(1)
x = r.normal(size=(300, 4)).astype(np.float32)
y = x[:, :3].argmax(axis=1)
np.save("x.npy", x[:240]); np.save("y.npy", y[:240])
np.savez("t.npz", x=x[240:], y=y[240:])'
}

# until_ N CMD...: run CMD every 0.1 s until it succeeds, at most N times
until_() {
	local n=$1 i=0
	shift
	until "$@"; do
		i=$((i + 1))
		[ "$i" -lt "$n" ] || { echo "until_: $* never held" >&2; return 1; }
		sleep 0.1
	done
}

# newest_model STORE [MODEL]: the newest step of model MODEL (default mlp)
# in STORE, nothing if it has none
newest_model() {
	spirt-store -s "$1" ls "model/${2:-mlp}@" 2>/dev/null | cut -f1 |
	    sed 's/.*@//' | sort -n | tail -n 1
}

# model_at STORE T: the newest model of STORE is at step T or past it
model_at() {
	local s
	s=$(newest_model "$1")
	[ -n "$s" ] && [ "$s" -ge "$2" ]
}

# stop_dead PID ID LOG: the peer whose process group PID leads stops (its
# beats with it) until LOG, another peer's, says ID is dead; then it is
# killed and reaped
stop_dead() {
	kill -STOP -- -"$1"
	until_ 300 grep -q "$2: dead" "$3" || return 1
	kill -KILL -- -"$1" 2>/dev/null || :
	kill -CONT -- -"$1" 2>/dev/null || :
	wait "$1" || :
}

# httppeers N: a group key (group.key, group.pub) and N members p0..pN-1
# (pI.key, pI.hex, pI.tok, of run r1), and a peers file naming each by a
# free port of 127.0.0.1 (bound, then let go)
httppeers() {
	local i port ports
	spirt-key keygen -p group.pub group.key >/dev/null
	ports=$("$PYTHON" -c 'import socket, sys
ss = [socket.socket() for i in range(int(sys.argv[1]))]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))' "$1")
	: >peers
	i=0
	for port in $ports; do
		spirt-key keygen p$i.key >p$i.hex
		spirt-key invite -o p$i.tok -g group.key -i p$i -r r1 \
		    "$(cat p$i.hex)"
		echo "p$i http://127.0.0.1:$port" >>peers
		i=$((i + 1))
	done
}

# group_keys [ID]: in the working directory, the group's key (group.pub,
# group.key), peer p1's key and token (p1.key, p1.tok) and a function's
# (f1.key, f1.tok), both of run r1; the function's id is its binding, ID
# (default p1.w0-2: one token for a fan-out over p1's workers 0-2)
group_keys() {
	spirt-key keygen -p group.pub group.key >/dev/null
	spirt-key keygen p1.key >p1.hex
	spirt-key invite -o p1.tok -g group.key -i p1 -r r1 "$(cat p1.hex)"
	spirt-key keygen f1.key >f1.hex
	spirt-key invite -o f1.tok -R function -g group.key \
	    -i "${1:-p1.w0-2}" -r r1 "$(cat f1.hex)"
}

# pathpeers FIRST LAST: keys pI.key (their public halves in pI.hex; a key
# that exists is kept) and a peers file naming peer pI by the path of its
# store sI, for I from FIRST to LAST
pathpeers() {
	local i
	: >peers
	for i in $(seq "$1" "$2"); do
		[ -e p$i.key ] || spirt-peer keygen p$i.key >p$i.hex
		echo "p$i $PWD/s$i" >>peers
	done
}

# peerstores N: stores s1..sN with the same model/m@0 (m0.rec) and each
# its own agg/0 (aI.rec), and pathpeers 1 N
peerstores() {
	local i
	for i in $(seq "$1"); do
		spirt-store -s s$i put model/m@0 m0.rec
		spirt-store -s s$i put agg/0 a$i.rec
	done
	pathpeers 1 "$1"
}

# allowlist FIRST LAST: the allowlist allow of the peers pI (their keys'
# public halves in pI.hex) for I from FIRST to LAST
allowlist() {
	local i
	printf 'VERSION=1\nTYPE=spirt-allowlist\n' >allow
	for i in $(seq "$1" "$2"); do
		echo "MEMBER=$(cat p$i.hex) peer p$i" >>allow
	done
	echo END >>allow
}

# xch I ARGS...: peer I's exchange of step 0 (model m, store sI, key
# pI.key, run r1) in the background, its pid in pidI, its output in outI
# and errI.  (20 s: a deadline only bounds the wait for a peer that does
# not answer; a loaded machine under the sanitizer starts three exchanges
# slowly)
xch() {
	local i=$1
	shift
	SPIRT_KEY=p$i.key SPIRT_ID=p$i SPIRT_RUN=r1 spirt-peer exchange -m m \
	    -s s$i -t 0 --deadline 20000 "$@" >out$i 2>err$i &
	eval "pid$i=\$!"
}

# csvbase: a 4-feature, 3-class table (train.csv, 60 rows) in 2 shards of
# the store base, and its test set
csvbase() {
	awk 'BEGIN { for (i = 0; i < 60; i++)
		printf "%d,%.3f,%.3f,%.3f,%.3f\n", i % 3, (i % 7) / 7 + i % 3,
		    (i % 5) / 5, (i % 3) / 3, (i % 11) / 11 }' >train.csv
	spirt-shard -s base -q -n 2 --seed 1 train.csv
	spirt-shard -s base -q -d test --classes 3 train.csv
}

# csv40: train.csv, a 4-feature, 3-class table of 40 rows
csv40() {
	awk 'BEGIN { for (i = 0; i < 40; i++)
		printf "%d,%.3f,%.3f,%.3f,%.3f\n", i % 3, (i % 7) / 7,
		    (i % 5) / 5, (i % 3) / 3, (i % 11) / 11 }' >train.csv
}

# members_of FILE:ROLE:ID...: the group's key (group.key, group.pub) and,
# for each, a key FILE.key (FILE.hex) and a token FILE.tok of run r1 with
# ROLE (peer, function) and ID
members_of() {
	local m f r
	spirt-peer keygen -p group.pub group.key >/dev/null || return 1
	for m in "$@"; do
		f=${m%%:*} r=${m#*:} r=${r%%:*}
		spirt-peer keygen "$f.key" >"$f.hex" &&
		spirt-peer invite -o "$f.tok" -R "$r" -g group.key \
		    -i "${m##*:}" -r r1 "$(cat "$f.hex")" || return 1
	done
}
