#!/usr/bin/python3
# make_grad_fixtures.py - PyTorch autograd gradients for tests/unit/test_model
#
# For each case below, builds the model of spirt-model(5) in PyTorch with
# parameters from a fixed seed, takes a fixed batch, and writes into the
# output directory (default tests/data/grad):
#
#   cases                 one line per case: NAME SPEC BATCH
#   NAME.params.npy       f32 [P]  the flat spirt parameter vector
#   NAME.x.npy            f32 [B, C*H*W] inputs (values in [0,1])
#   NAME.y.npy            i32 [B]  labels
#   NAME.grad.npy         f32 [P]  d(mean cross-entropy)/d(params), autograd
#   NAME.loss.npy         f64 [1]  the mean cross-entropy
#
# The flat vector is each layer's weight then bias, in PyTorch's own
# layouts, so params/grad are torch's tensors concatenated in order.
# Run with Debian's python3 (python3-torch, python3-numpy):
#   /usr/bin/python3 contrib/python/make_grad_fixtures.py [outdir]
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

CASES = [
    ("softmax", "softmax:20:5", 8),
    ("mlp", "mlp:30-16-12-10", 8),
    ("mlp784", "mlp:784-32-10", 4),
    ("cnn", "cnn:1x16x16-4-6-10", 4),
    ("cnn28", "cnn:1x28x28-4-8-10", 3),
    ("cnn3", "cnn:3x20x20-3-5-7", 3),
]


class Net(nn.Module):
    """The spirt model for spec, layers in parameter order."""

    def __init__(self, spec):
        super().__init__()
        kind, rest = spec.split(":", 1)
        self.kind = kind
        if kind == "softmax":
            d, k = (int(v) for v in rest.split(":"))
            self.shape = (d,)
            self.fcs = nn.ModuleList([nn.Linear(d, k)])
        elif kind == "mlp":
            v = [int(s) for s in rest.split("-")]
            self.shape = (v[0],)
            self.fcs = nn.ModuleList(
                [nn.Linear(a, b) for a, b in zip(v, v[1:])])
        elif kind == "cnn":
            shape, c1, c2, k = rest.split("-")
            c, h, w = (int(s) for s in shape.split("x"))
            c1, c2, k = int(c1), int(c2), int(k)
            self.shape = (c, h, w)
            self.conv1 = nn.Conv2d(c, c1, 5)
            self.conv2 = nn.Conv2d(c1, c2, 5)
            h2 = ((h - 4) // 2 - 4) // 2
            w2 = ((w - 4) // 2 - 4) // 2
            self.fcs = nn.ModuleList([nn.Linear(c2 * h2 * w2, k)])
        else:
            raise ValueError(spec)

    def forward(self, x):
        if self.kind == "cnn":
            x = x.view(-1, *self.shape)
            x = F.max_pool2d(F.relu(self.conv1(x)), 2)
            x = F.max_pool2d(F.relu(self.conv2(x)), 2)
            x = torch.flatten(x, 1)
        for i, fc in enumerate(self.fcs):
            x = fc(x)
            if i + 1 < len(self.fcs):
                x = F.relu(x)
        return x


def flat(tensors):
    return np.concatenate(
        [t.detach().numpy().astype(np.float32).ravel() for t in tensors])


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/data/grad"
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(20240601)
    with open(os.path.join(out, "cases"), "w") as f:
        f.write("# NAME SPEC BATCH - written by "
                "contrib/python/make_grad_fixtures.py\n")
        for name, spec, batch in CASES:
            net = Net(spec)
            with torch.no_grad():
                for p in net.parameters():      # non-zero biases too
                    p.add_(0.05 * torch.randn_like(p))
            nin = int(np.prod(net.shape))
            x = torch.rand(batch, nin)
            nclass = net.fcs[-1].out_features
            y = torch.randint(0, nclass, (batch,))
            loss = F.cross_entropy(net(x), y)
            loss.backward()
            params = list(net.parameters())
            np.save(os.path.join(out, name + ".params.npy"), flat(params))
            np.save(os.path.join(out, name + ".x.npy"),
                    x.numpy().astype(np.float32))
            np.save(os.path.join(out, name + ".y.npy"),
                    y.numpy().astype(np.int32))
            np.save(os.path.join(out, name + ".grad.npy"),
                    flat([p.grad for p in params]))
            np.save(os.path.join(out, name + ".loss.npy"),
                    np.array([loss.item()], dtype=np.float64))
            f.write("%s %s %d\n" % (name, spec, batch))


if __name__ == "__main__":
    main()
