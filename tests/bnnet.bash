# tests/bnnet.bash - a model with state (spirt-model(5)) for the tests of
# a model's state (62-state, 69-state-modes): a module defined here, with
# BatchNorm and a residual block, and a small .npy copy of Fashion-MNIST
#
#   load bnnet
#   bnnet_setup          # setup(): in the test's directory (TMPDIR too),
#                        # bnnet_require and bnnet_files
#   bnnet_require        # skip (bats) without python3-torch or the data
#   bnnet_files          # in the working directory: net.py (the module,
#                        # model() its factory), X.npy y.npy (the first
#                        # 480 training images), tX.npy ty.npy (the first
#                        # 200 test images) and ref.py (below)
#
# ref.py: rec(path), a record file (python/spirt/tensor.py reads it);
# mean_of(m, paths, step), record m is the mean of those records;
# module(model, state), the module with the parameters of record model
# and the buffers of record state; buffers(n), a module's float buffers.

# bnnet_setup: a test's setup: in its directory (TMPDIR too), with the
# files of bnnet_files, or skipped
bnnet_setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
	export TMPDIR="$BATS_TEST_TMPDIR"
	bnnet_require
	bnnet_files
}

# bnnet_require: the adapter's python3-torch and Fashion-MNIST, or skip
bnnet_require() {
	export SPIRT_PYTHON="$PYTHON"
	"$PYTHON" -c 'import torch' 2>/dev/null ||
	    skip "python3-torch is not installed"
	[ -r "$FMNIST/train-images-idx3-ubyte.gz" ] ||
		skip "no Fashion-MNIST (Debian package dataset-fashion-mnist)"
}

# bnnet_files: net.py, the data and ref.py in the working directory (the
# data made once a file, in BATS_FILE_TMPDIR)
bnnet_files() {
	local d="$BATS_FILE_TMPDIR/bnnet"
	[ -s "$d/ty.npy" ] || bnnet_data "$d" || return 1
	cp "$d"/X.npy "$d"/y.npy "$d"/tX.npy "$d"/ty.npy .
	cat >net.py <<-'PY'
	import torch
	from torch import nn
	import torch.nn.functional as F

	class Res(nn.Module):
	    def __init__(self):
	        super().__init__()
	        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
	        self.bn1 = nn.BatchNorm2d(4)
	        self.conv2 = nn.Conv2d(4, 4, 3, padding=1)
	        self.bn2 = nn.BatchNorm2d(4)
	        self.fc = nn.Linear(4 * 7 * 7, 10)

	    def forward(self, x):
	        h = F.relu(self.bn1(self.conv1(x)))
	        h = F.relu(h + self.bn2(self.conv2(h)))     # the residual block
	        h = F.max_pool2d(h, 4)
	        return self.fc(torch.flatten(h, 1))

	def model():
	    return Res()
	PY
	cat >ref.py <<-PY
	import sys
	import numpy as np
	import torch
	sys.path.insert(0, "$BATS_TEST_DIRNAME/../python")
	sys.path.insert(0, ".")
	from spirt import tensor
	import net as netpy

	def rec(path):
	    with open(path, "rb") as f:
	        return tensor.read_record(f)

	def mean_of(m, paths, want_step):
	    """record m is the mean of the records at paths within 1e-6"""
	    ws = [rec(p) for p in paths]
	    assert m.name.startswith("torch:net:") and m.step == want_step, m
	    assert [w.origin for w in ws] == list(range(len(ws))), ws
	    assert all(w.step == want_step - 1 for w in ws)
	    want = np.mean([w.array.astype(np.float64) for w in ws], axis=0)
	    d = float(np.abs(m.array - want).max())
	    print("maxdiff", d)
	    assert m.array.size == 16 and d <= 1e-6

	def buffers(n):
	    return [b for b in n.buffers() if b.is_floating_point()]

	def module(model, state):
	    """the module with model's parameters and state's buffers"""
	    n = netpy.model()
	    for ts, r in ((list(n.parameters()), model), (buffers(n), state)):
	        v, at = torch.from_numpy(rec(r).array.copy()), 0
	        with torch.no_grad():
	            for p in ts:
	                p.copy_(v[at:at + p.numel()].view_as(p))
	                at += p.numel()
	    return n
	PY
}

# bnnet_data DIR: the first 480 training and 200 test images, as .npy
bnnet_data() {
	mkdir -p "$1" && "$PYTHON" - "$FMNIST" "$1" <<-'PY'
	import gzip, sys
	import numpy as np
	def idx(name, n, off, shape):
	    with gzip.open("%s/%s" % (sys.argv[1], name)) as f:
	        b = f.read()
	    return np.frombuffer(b, np.uint8, n * int(np.prod(shape)),
	                         off).reshape((n,) + shape)
	for p, n, d in (("train", 480, ""), ("t10k", 200, "t")):
	    x = idx(p + "-images-idx3-ubyte.gz", n, 16, (1, 28, 28))
	    y = idx(p + "-labels-idx1-ubyte.gz", n, 8, ())
	    np.save("%s/%sX.npy" % (sys.argv[2], d), x.astype(np.float32) / 255)
	    np.save("%s/%sy.npy" % (sys.argv[2], d), y.astype(np.int64))
	PY
}
