"""spirt_torch.py - a spirt model as a PyTorch state_dict (spirt-model(5)).

    python3 spirt_torch.py model.spt model.pt     # torch.load() reads it
    python3 spirt_torch.py model.spt model.npz    # numpy.load() reads it

model.spt is a model record or model file (spirt-init -o, spirt-update -o,
or `spirt-store get model/mlp@7 > model.spt`); its first record is the
model, a second (optimiser state) is ignored.  The output holds the
state_dict of the equivalent torch module: fc1.weight, fc1.bias, ... for
softmax and mlp, conv1.*, conv2.*, fc1.* for cnn, each in PyTorch's layout
(spirt's vector is those tensors concatenated in order, so nothing is
transposed).  A .pt file holds torch tensors, a .npz file NumPy arrays
under the same names: torch.from_numpy() makes the one from the other.

    import torch, spirt_torch
    net = spirt_torch.Net("mlp:784-256-128-10")
    net.load_state_dict(torch.load("model.pt"))

Net is the equivalent module; its forward gives the logits spirt-eval(1)
takes its accuracy and loss from (inputs flattened C*H*W or D values,
byte images scaled to [0, 1] by the caller).
"""
import os
import re
import sys

import numpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spirt_tensor  # noqa: E402


def layers(spec):
    """[(name, shape), ...] of spec's parameters, in vector order."""
    m = re.fullmatch(r"softmax:(\d+):(\d+)", spec)
    if m:
        d, k = map(int, m.groups())
        return [("fc1.weight", (k, d)), ("fc1.bias", (k,))]
    m = re.fullmatch(r"mlp:(\d+(?:-\d+)+)", spec)
    if m:
        dims = list(map(int, m.group(1).split("-")))
        if len(dims) < 2:
            raise ValueError("%s: an mlp needs two sizes" % spec)
        out = []
        for i in range(len(dims) - 1):
            out += [("fc%d.weight" % (i + 1), (dims[i + 1], dims[i])),
                    ("fc%d.bias" % (i + 1), (dims[i + 1],))]
        return out
    m = re.fullmatch(r"cnn:(\d+)x(\d+)x(\d+)-(\d+)-(\d+)-(\d+)", spec)
    if m:
        c, h, w, c1, c2, k = map(int, m.groups())
        h2, w2 = ((h - 4) // 2 - 4) // 2, ((w - 4) // 2 - 4) // 2
        return [("conv1.weight", (c1, c, 5, 5)), ("conv1.bias", (c1,)),
                ("conv2.weight", (c2, c1, 5, 5)), ("conv2.bias", (c2,)),
                ("fc1.weight", (k, c2 * h2 * w2)), ("fc1.bias", (k,))]
    raise ValueError("%s: not a spirt model spec (spirt-model(5))" % spec)


def state_dict(vector, spec):
    """Split the flat float32 vector of spec into named NumPy arrays."""
    v = numpy.asarray(vector, dtype="<f4")
    want = sum(int(numpy.prod(s)) for _, s in layers(spec))
    if v.size != want:
        raise ValueError("%s: %d values, the spec needs %d" %
                         (spec, v.size, want))
    out, at = {}, 0
    for name, shape in layers(spec):
        n = int(numpy.prod(shape))
        out[name] = v[at:at + n].reshape(shape).astype("float32")
        at += n
    return out


def read_model(path):
    """(state_dict of NumPy arrays, spec, step) of a model file."""
    with open(path, "rb") as f:
        rec = spirt_tensor.read_record(f)
    if rec.array.dtype != numpy.dtype("<f4") or rec.array.ndim != 1:
        raise ValueError("%s: not a model record (f32 [P])" % path)
    return state_dict(rec.array, rec.name), rec.name, rec.step


def Net(spec):
    """The torch module whose state_dict layout is spec's."""
    import torch
    from torch import nn
    import torch.nn.functional as F

    names = [n for n, _ in layers(spec)]
    shapes = dict(layers(spec))

    class _Net(nn.Module):
        def __init__(self):
            super().__init__()
            for n in names:
                if n.endswith(".weight"):
                    s = shapes[n]
                    mod = n.split(".")[0]
                    if mod.startswith("conv"):
                        setattr(self, mod, nn.Conv2d(s[1], s[0], 5))
                    else:
                        setattr(self, mod, nn.Linear(s[1], s[0]))
            self.cnn = spec.startswith("cnn:")
            self.fcs = [getattr(self, n.split(".")[0]) for n in names
                        if n.startswith("fc") and n.endswith(".weight")]
            if self.cnn:
                self.chw = tuple(map(int, re.match(
                    r"cnn:(\d+)x(\d+)x(\d+)", spec).groups()))

        def forward(self, x):
            if self.cnn:
                x = x.reshape((x.shape[0],) + self.chw)
                x = F.max_pool2d(F.relu(self.conv1(x)), 2)
                x = F.max_pool2d(F.relu(self.conv2(x)), 2)
                x = torch.flatten(x, 1)
            else:
                x = x.reshape(x.shape[0], -1)
            for i, fc in enumerate(self.fcs):
                x = fc(x)
                if i + 1 < len(self.fcs):
                    x = F.relu(x)
            return x

    return _Net()


def main(argv):
    if len(argv) != 3 or not argv[2].endswith((".pt", ".npz")):
        sys.stderr.write("usage: spirt_torch.py model.spt out.pt|out.npz\n")
        return 64
    try:
        sd, spec, step = read_model(argv[1])
    except (OSError, ValueError, spirt_tensor.RecordError) as e:
        sys.stderr.write("spirt_torch.py: %s: %s\n" % (argv[1], e))
        return 65 if not isinstance(e, OSError) else 66
    tmp = argv[2] + ".tmp.%d" % os.getpid()
    if argv[2].endswith(".npz"):
        with open(tmp, "wb") as f:
            numpy.savez(f, **sd)
    else:
        import torch
        torch.save({k: torch.from_numpy(a) for k, a in sd.items()}, tmp)
    os.replace(tmp, argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
