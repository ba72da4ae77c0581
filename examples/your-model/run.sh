#!/bin/sh
# your-model: a PyTorch module of your own (net.py: a residual conv net
# with BatchNorm) and NumPy arrays of your own (here a slice of
# Fashion-MNIST saved as .npy), trained by spirt-train through
# spirt-torch: three warm functions, the median of their gradients (and
# of their BatchNorm statistics), evaluated by the module itself.
#
#   sh run.sh [workdir]      STEPS=n (default 100), PYTHON=python3,
#                            FMNIST=dir (default Debian's)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
PATH="$here/../..:$PATH"                # the tools, when run from the tree
py=${PYTHON:-python3}
steps=${STEPS:-100}
fm=${FMNIST:-/usr/share/datasets/fashion-mnist}
work=${1:-$(mktemp -d)}
mkdir -p "$work" && cd "$work"

# 1. your arrays: X float32 [N, 1, 28, 28] in [0, 1], y integer labels;
#    here the first 3,000 training and 1,000 test images
"$py" - "$fm" <<'PY'
import gzip, sys
import numpy as np
d = sys.argv[1]
def idx(name, off, n, shape):
    with gzip.open("%s/%s" % (d, name)) as f:
        return np.frombuffer(f.read(), np.uint8, offset=off)[
            :n * int(np.prod(shape))].reshape((n,) + shape)
for pre, n, out in (("train", 3000, ""), ("t10k", 1000, "test-")):
    x = idx(pre + "-images-idx3-ubyte.gz", 16, n, (1, 28, 28))
    y = idx(pre + "-labels-idx1-ubyte.gz", 8, n, ())
    np.save(out + "x.npy", (x / 255).astype(np.float32))
    np.save(out + "y.npy", y.astype(np.int64))
PY
rm -rf own.db
# 2. into a store: three shards for three functions, and the test set
spirt-shard -q -s own.db -d mine -n 3 --seed 1 x.npy y.npy
spirt-shard -q -s own.db -d mine-test test-x.npy test-y.npy
# 3. model@0 from the module (its spec names it: torch:net:5202, the
#    file's name and the parameters' count)
spirt-torch init -q -s own.db -m res --module "$here/net.py"
# 4. the training: the median of the three functions' gradients a step
spirt-train -q -s own.db -m res --train mine --test mine-test \
    -n 3 -a median -b 32 -o adam -l 0.003 -S 1 --steps "$steps" \
    --eval-every 25 \
    --function "spirt-torch grad --module $here/net.py" \
    --evaluate "spirt-torch eval --module $here/net.py"
# 5. what it made: the test accuracy a step (the log's column 6), the
#    model and its BatchNorm state of the last step
awk -F'\t' 'NR > 1 && $6 != "-" { printf "step %s: test accuracy %s\n", $2, $6 }' \
    own.db.train-res.tsv
for k in "model/res@$steps" "mstate/res@$steps"; do
	spirt-store -s own.db show "$k" | grep -E "^(key|shape)="
done
