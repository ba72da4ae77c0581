#!/usr/bin/env bats
# 62-torch: a spirt model exported by contrib/python/spirt_torch.py loads
# into PyTorch (torch.load, and numpy.load of the .npz) as the state_dict
# of the equivalent torch module, written here independently of the
# exporter, and gives spirt-eval's test accuracy and loss.

load helper

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
	export SPIRT_STORE="$BATS_TEST_TMPDIR/spirt.db"
	"$PYTHON" -c 'import torch' 2>/dev/null ||
	    skip "python3-torch is not installed"
	EXPORT="$SPIRT_ROOT/contrib/python/spirt_torch.py"
}

# train MODEL SPEC STEPS: a few SGD steps of 2 workers on the store's data
train() {
	local t w
	spirt-init -m "$1" -S 5 "$2"
	for ((t = 0; t < $3; t++)); do
		for w in 0 1; do spirt-grad -m "$1" -t $t -w $w -b 16; done
		spirt-agg -q -t $t
		spirt-update -m "$1" -t $t -r 0.3
	done
}

# torch_eval PT|NPZ CSV KIND: accuracy and loss of the file's state_dict
# in a torch module defined here (KIND mlp:dims or cnn:c,h,w), on CSV
# (label, then features; SCALE divides them)
torch_eval() {
	"$PYTHON" - "$@" <<-'PY'
	import sys
	import numpy as np
	import torch
	from torch import nn
	import torch.nn.functional as F

	path, csv, kind = sys.argv[1:4]
	scale = float(sys.argv[4]) if len(sys.argv) > 4 else 1.0
	if path.endswith(".npz"):
	    sd = {k: torch.from_numpy(v) for k, v in np.load(path).items()}
	else:
	    sd = torch.load(path)

	class MLP(nn.Module):
	    def __init__(self, dims):
	        super().__init__()
	        self.n = len(dims) - 1
	        for i in range(self.n):
	            setattr(self, "fc%d" % (i + 1), nn.Linear(dims[i], dims[i + 1]))
	    def forward(self, x):
	        for i in range(self.n):
	            x = getattr(self, "fc%d" % (i + 1))(x)
	            if i + 1 < self.n:
	                x = F.relu(x)
	        return x

	class CNN(nn.Module):
	    def __init__(self, c, h, w, c1, c2, k):
	        super().__init__()
	        self.chw = (c, h, w)
	        self.conv1 = nn.Conv2d(c, c1, 5)
	        self.conv2 = nn.Conv2d(c1, c2, 5)
	        h2, w2 = ((h - 4) // 2 - 4) // 2, ((w - 4) // 2 - 4) // 2
	        self.fc1 = nn.Linear(c2 * h2 * w2, k)
	    def forward(self, x):
	        x = x.reshape((-1,) + self.chw)
	        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
	        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
	        return self.fc1(torch.flatten(x, 1))

	name, arg = kind.split(":")
	dims = [int(d) for d in arg.split("-")]
	net = MLP(dims) if name == "mlp" else CNN(*dims)
	net.load_state_dict(sd)         # strict: every name and shape
	data = np.loadtxt(csv, delimiter=",", dtype=np.float64, ndmin=2)
	y = torch.from_numpy(data[:, 0].astype(np.int64))
	x = torch.from_numpy((data[:, 1:] / scale).astype(np.float32))
	with torch.no_grad():
	    z = net(x).double()
	acc = (z.argmax(1) == y).double().mean().item()
	loss = F.cross_entropy(z, y).item()
	print("accuracy=%.6f loss=%.9g" % (acc, loss))
	PY
}

# same_figures SPIRT_EVAL_OUTPUT TORCH_OUTPUT: equal accuracy, loss close
same_figures() {
	local a l ta tl
	a=$(sed -n 's/^accuracy=//p' <<<"$1")
	l=$(sed -n 's/^loss=//p' <<<"$1")
	ta=$(sed -n 's/^accuracy=\([^ ]*\) .*/\1/p' <<<"$2")
	tl=$(sed -n 's/.* loss=//p' <<<"$2")
	echo "spirt-eval: accuracy=$a loss=$l; torch: accuracy=$ta loss=$tl"
	[ -n "$a" ] && [ -n "$ta" ]
	awk -v a="$a" -v b="$ta" -v l="$l" -v m="$tl" 'BEGIN {
		d = l - m; if (d < 0) d = -d
		exit !(a + 0 == b + 0 && d <= 1e-4 * (l < 0 ? -l : l) + 1e-6) }'
}

@test "an MLP trained by spirt gives spirt-eval's figures in PyTorch" {
	awk 'BEGIN { srand(3); for (i = 0; i < 300; i++) { c = i % 3
		printf "%d", c
		for (j = 0; j < 6; j++) printf ",%.4f", rand() + (j == c ? 0.6 : 0)
		print "" } }' > all.csv
	head -n 240 all.csv > train.csv
	tail -n 60 all.csv > test.csv
	spirt-shard -q -n 2 train.csv
	spirt-shard -q -d test test.csv
	train m mlp:6-12-3 30
	[ -n "$(spirt-store ls model/m@30)" ]
	spirt-store get model/m@30 > m.spt
	run -0 spirt-eval -m m -t 30
	ev=$output
	grep -q '^accuracy=' <<<"$ev"
	# better than chance, so a wrong layout could not match by luck
	awk -v a="$(sed -n 's/^accuracy=//p' <<<"$ev")" 'BEGIN { exit !(a > 0.6) }'
	run -0 "$PYTHON" "$EXPORT" m.spt m.pt
	run -0 torch_eval m.pt test.csv mlp:6-12-3
	same_figures "$ev" "$output"
	run -0 "$PYTHON" "$EXPORT" m.spt m.npz
	run -0 torch_eval m.npz test.csv mlp:6-12-3
	same_figures "$ev" "$output"
	# the names and shapes numpy.load sees
	run -0 "$PYTHON" -c 'import numpy as np
d = np.load("m.npz")
print(" ".join("%s%s" % (k, list(d[k].shape)) for k in sorted(d)))'
	assert_output 'fc1.bias[12] fc1.weight[12, 6] fc2.bias[3] fc2.weight[3, 12]'
}

@test "a CNN gives spirt-eval's figures in PyTorch" {
	# 16x16 images of 4 classes, each class bright in its own quadrant
	awk 'BEGIN { srand(7); for (i = 0; i < 120; i++) { c = i % 4
		printf "%d", c
		for (j = 0; j < 256; j++) {
			q = (int(j / 16) >= 8) * 2 + (j % 16 >= 8)
			printf ",%.3f", rand() * 0.3 + (q == c ? 0.7 : 0)
		}
		print "" } }' > img.csv
	head -n 80 img.csv > train.csv
	tail -n 40 img.csv > test.csv
	spirt-shard -q -n 2 train.csv
	spirt-shard -q -d test test.csv
	train c cnn:1x16x16-3-4-4 20
	spirt-store get model/c@20 > c.spt
	run -0 spirt-eval -m c -t 20
	ev=$output
	awk -v a="$(sed -n 's/^accuracy=//p' <<<"$ev")" 'BEGIN { exit !(a > 0.5) }'
	run -0 "$PYTHON" "$EXPORT" c.spt c.pt
	run -0 torch_eval c.pt test.csv cnn:1-16-16-3-4-4
	same_figures "$ev" "$output"
	# the same figures from a different model would not do
	spirt-store get model/c@0 > c0.spt
	run -0 "$PYTHON" "$EXPORT" c0.spt c0.pt
	run -0 torch_eval c0.pt test.csv cnn:1-16-16-3-4-4
	run ! same_figures "$ev" "$output"
}

@test "spirt_torch.py: a record that is not a model is refused" {
	"$PYTHON" -c "$PYREC"'
out(st.encode(np.zeros(7, np.float32), name="mlp:4-5-3", step=0))' > bad.spt
	run -65 "$PYTHON" "$EXPORT" bad.spt bad.pt
	assert_output --partial 'mlp:4-5-3: 7 values, the spec needs 43'
	[ ! -e bad.pt ]
	run -64 "$PYTHON" "$EXPORT" bad.spt bad.txt
	run -66 "$PYTHON" "$EXPORT" nowhere.spt x.pt
}
