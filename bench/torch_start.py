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


def ResNet8():
    """spirt's resnet8:1x28x28-10 (spirt-model(5)): its parameters in the
    order of spirt's vector (each block's body, then its shortcut), as
    bench/grad_torch.py's"""
    import torch.nn as nn
    import torch.nn.functional as F

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.b1 = nn.BatchNorm2d(cout)
            self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.b2 = nn.BatchNorm2d(cout)
            self.sc = nn.Sequential()
            if stride != 1 or cin != cout:
                self.sc = nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride, 0, bias=False),
                    nn.BatchNorm2d(cout))

        def forward(self, x):
            y = self.b2(self.c2(F.relu(self.b1(self.c1(x)))))
            return F.relu(y + self.sc(x))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.c = nn.Conv2d(1, 16, 3, 1, 1, bias=False)
            self.b = nn.BatchNorm2d(16)
            self.s = nn.Sequential(Block(16, 16, 1), Block(16, 32, 2),
                                   Block(32, 64, 2))
            self.fc = nn.Linear(64, 10)

        def forward(self, x):
            x = F.relu(self.b(self.c(x.view(-1, 1, 28, 28))))
            return self.fc(self.s(x).mean((2, 3)))

    return Net()


def load_list(net, path):
    """A layer list's record (resnet8:...): spirt's vector is the torch
    module's parameters concatenated in order, in PyTorch's layouts
    (spirt-model(5)), checked by its total size; a fresh state (means 0,
    variances 1) is torch's own start."""
    import torch
    with open(path, "rb") as f:
        rec = spirt_torch.spirt_tensor.read_record(f)
    v, ps = rec.array, list(net.parameters())
    if v.ndim != 1 or v.size != sum(p.numel() for p in ps):
        raise ValueError("%s: %s has %d values, the torch module %d" %
                         (path, rec.name, v.size,
                          sum(p.numel() for p in ps)))
    at = 0
    with torch.no_grad():
        for p in ps:
            p.copy_(torch.from_numpy(
                v[at:at + p.numel()].reshape(p.shape).astype("float32")))
            at += p.numel()
    return rec.name


def load(net, path):
    """Set net's parameters (in order) to the spirt model file's."""
    import torch
    with open(path, "rb") as f:
        name = spirt_torch.spirt_tensor.read_record(f).name
    if name.startswith("resnet8:"):
        return load_list(net, path)
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
    elif spec == "resnet8:1x28x28-10":
        net = ResNet8()
        net.eval()          # spirt-eval: the running statistics
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
        z = torch.cat([net(x[i:i + 1000]) for i in range(0, len(x), 1000)])
        print("%.9g %.9g" % (F.cross_entropy(z, y).item(),
                             (z.argmax(1) == y).float().mean().item()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
