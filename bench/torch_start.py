"""torch_start.py - PyTorch's side of a race starts from spirt's model@0.

The benches race spirt against PyTorch from the same initial weights:
spirt-init's (He normal, Glorot uniform for the last layer, zero biases;
spirt-init(1)), not PyTorch's default initialisation, so that neither side
starts ahead.  bench/start.sh writes model@0 of the round's seed to a file
with spirt-init -o, and the torch scripts load it:

    import torch_start
    torch_start.load(net, "start.spt")

load() copies the record's parameters (spirt-model(5), split by
contrib/python/spirt_torch.py into PyTorch's layout: a Linear's weight is
(out, in), a Conv2d's (out, in, kh, kw), as spirt stores them) into net's
parameters in order, each checked for its name's shape.

    python3 bench/torch_start.py SPEC FILE

prints "loss accuracy" of FILE's model on the Fashion-MNIST test set
($FMNIST) in a torch module built as the benches build theirs, with
load(): bench/start.sh compares it with spirt-eval's, the guard that both
sides start bit for bit from the same model.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "contrib", "python"))
import spirt_torch  # noqa: E402


def load(net, path):
    """Set net's parameters (in order) to the spirt model file's."""
    import torch
    sd, spec, _ = spirt_torch.read_model(path)
    names = [n for n, _ in spirt_torch.layers(spec)]
    ps = list(net.parameters())
    if len(ps) != len(names):
        raise ValueError("%s: %s has %d tensors, the torch module %d" %
                         (path, spec, len(names), len(ps)))
    with torch.no_grad():
        for p, n in zip(ps, names):
            if tuple(p.shape) != sd[n].shape:
                raise ValueError("%s: %s is %s, the torch module's %s" %
                                 (path, n, sd[n].shape, tuple(p.shape)))
            p.copy_(torch.from_numpy(sd[n].copy()))
    return spec


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: torch_start.py spec file\n")
        return 64
    os.environ["OMP_NUM_THREADS"] = "1"
    import gzip
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    spec = argv[1]
    if spec.startswith("mlp:"):
        d = list(map(int, spec[4:].split("-")))
        mods = []
        for i in range(len(d) - 1):
            mods += [nn.Linear(d[i], d[i + 1]), nn.ReLU()]
        net = nn.Sequential(nn.Flatten(), *mods[:-1])
    elif spec == "cnn:1x28x28-32-64-10":
        # (bench/torch_train.py's)
        net = nn.Sequential(nn.Conv2d(1, 32, 5), nn.ReLU(), nn.MaxPool2d(2),
                            nn.Conv2d(32, 64, 5), nn.ReLU(), nn.MaxPool2d(2),
                            nn.Flatten(), nn.Linear(1024, 10))
    else:
        sys.stderr.write("torch_start.py: %s: not a model of the benches\n"
                         % spec)
        return 64
    if load(net, argv[2]) != spec:
        sys.stderr.write("torch_start.py: %s: not a %s model\n" %
                         (argv[2], spec))
        return 65
    dd = os.environ.get("FMNIST", "/usr/share/datasets/fashion-mnist")
    with gzip.open(dd + "/t10k-images-idx3-ubyte.gz") as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16)
    with gzip.open(dd + "/t10k-labels-idx1-ubyte.gz") as f:
        y = torch.tensor(np.frombuffer(f.read(), np.uint8, offset=8),
                         dtype=torch.long)
    x = torch.tensor(x.reshape(-1, 1, 28, 28), dtype=torch.float32) / 255
    with torch.no_grad():
        z = net(x)
        print("%.9g %.9g" % (F.cross_entropy(z, y).item(),
                             (z.argmax(1) == y).float().mean().item()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
