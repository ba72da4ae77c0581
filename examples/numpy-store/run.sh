#!/bin/sh
# numpy-store: NumPy -> spirt store -> NumPy, and a bad record refused.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
PATH="$here/../..:$PATH"                # the tools, when run from the tree
PYTHON=${PYTHON:-/usr/bin/python3}      # Debian's, with numpy
work=${1:-$(mktemp -d)}
mkdir -p "$work" && cd "$work"
export SPIRT_STORE="$work/example.db"

# 1. an array made by numpy
"$PYTHON" -c 'import numpy as np
np.save("w.npy", np.random.default_rng(0).standard_normal((128, 10), dtype=np.float32))'

# 2. into the store (created on first write), with a step in its metadata
spirt-store import -t 0 model/demo@0 w.npy
spirt-store ls                          # key dtype shape bytes step origin
spirt-store show model/demo@0 | sed -n '/^min=/,/^l2=/p'

# 3. back out as .npy; numpy sees the identical array
spirt-store export model/demo@0 back.npy
"$PYTHON" -c 'import numpy as np
a, b = np.load("w.npy"), np.load("back.npy")
assert a.dtype == b.dtype and np.array_equal(a, b)
print("round trip: identical", b.dtype, b.shape)'

# 4. a record with one flipped byte is refused (exit 65); nothing changes
spirt-store get model/demo@0 > w.rec
"$PYTHON" -c 'b = bytearray(open("w.rec", "rb").read()); b[200] ^= 1
open("bad.rec", "wb").write(b)'
if spirt-store put model/demo@1 bad.rec; then
	echo "a corrupted record was accepted" >&2
	exit 1
else
	echo "corrupted record refused with exit $?"
fi
spirt-store ls
