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
import warnings

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


# ---- layer lists (net:, resnet8:, mobilenet:) ----
#
# Cases of spirt-model(5)'s layer lists, in float64 with batch
# normalisation in training mode, into the same directory:
#
#   nets                  one line per case: NAME SPEC BATCH
#   NAME.params.npy, .x.npy, .y.npy, .grad.npy, .loss.npy  as above
#   NAME.tol.npy          f64 [T, 3]: offset, length and allowed error of
#                         each parameter tensor's gradient, max(1e-4, 1.1 x
#                         float32 torch's own max error there)
#   NAME.state_in.npy     f32 [S]  running statistics before the step
#   NAME.state.npy        f32 [S]  ... after it (momentum 0.1, unbiased
#                         variance), as torch updates them
#   NAME.evalloss.npy     f64 [1]  the mean loss in evaluation mode with
#                         the statistics after the step

NETS = [
    ("resnet8", "resnet8:1x28x28-10", 37),
    ("dwnet", "net:2x11x11:conv3-6p0,relu,res(relu,dw3,bn,conv1-6),"
     "maxpool3s2,dw3s2,bn,relu,avgpool2,flatten,dense-12,relu,dense-5", 9),
    ("mobilenet", "mobilenet:1x28x28-10", 37),
]

RESNET8 = ("conv3-16,bn,relu,res(conv3-16,bn,relu,conv3-16,bn),relu,"
           "res(conv3-32s2,bn,relu,conv3-32,bn|conv1-32s2,bn),relu,"
           "res(conv3-64s2,bn,relu,conv3-64,bn|conv1-64s2,bn),relu,"
           "gap,dense-%d")


def mobilenet(k, n=16):
    """spirt-model(5)'s mobilenet preset: its list for K classes, width N"""
    lst = "conv3-%d,bn,relu" % n
    for i, mul in enumerate((1, 2, 2, 4, 4)):
        lst += ",dw3%s,bn,relu,conv1-%d,bn,relu" % (
            "s2" if i > 0 and mul > (1, 2, 2, 4, 4)[i - 1] else "", n * mul)
    return lst + ",gap,dense-%d" % k


def split(s, seps):
    """s split at the separators in seps outside parentheses."""
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if depth == 0 and ch in seps:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return out


def conv_args(tok):
    """k, s, p of conv3-16s2p0 / dw3s2 (after the name and channels)."""
    import re
    m = re.fullmatch(r"(\d+)(?:-(\d+))?(?:s(\d+))?(?:p(\d+))?", tok)
    k = int(m.group(1))
    oc = int(m.group(2)) if m.group(2) else None
    s = int(m.group(3)) if m.group(3) else 1
    p = int(m.group(4)) if m.group(4) is not None else (k - 1) // 2
    return k, oc, s, p


class LayerNet(nn.Module):
    """A spirt layer list: parametric modules registered in spec order."""

    def __init__(self, spec):
        super().__init__()
        if spec.startswith("resnet8:"):
            shape, k = spec[8:].split("-")
            spec = "net:%s:%s" % (shape, RESNET8 % int(k))
        elif spec.startswith("mobilenet:"):
            shape, k, *w = spec[10:].split("-")
            spec = "net:%s:%s" % (shape, mobilenet(
                int(k), int(w[0][1:]) if w else 16))
        _, shape, body = spec.split(":", 2)
        self.shape = tuple(int(v) for v in shape.split("x"))
        self.mods = nn.ModuleList()
        c = [self.shape[0]]
        self.prog = self.build(body, c)

    def build(self, s, c):
        prog = []
        toks = split(s, ",")
        for i, t in enumerate(toks):
            nxt = toks[i + 1] if i + 1 < len(toks) else ""
            if t.startswith("res("):
                parts = split(t[4:-1], "|")
                c0 = c[0]
                body = self.build(parts[0], c)
                cb = [c0]
                sc = self.build(parts[1], cb) if len(parts) > 1 else []
                prog.append(("res", body, sc))
            elif t.startswith("conv") or t.startswith("dw"):
                dw = t.startswith("dw")
                k, oc, st, p = conv_args(t[2 if dw else 4:])
                oc = c[0] if dw else oc
                m = nn.Conv2d(c[0], oc, k, st, p, bias=(nxt != "bn"),
                              groups=c[0] if dw else 1)
                self.mods.append(m)
                prog.append(("mod", m))
                c[0] = oc
            elif t == "bn":
                m = nn.BatchNorm2d(c[0])
                self.mods.append(m)
                prog.append(("mod", m))
            elif t == "relu":
                prog.append(("relu",))
            elif t.startswith("maxpool"):
                k, _, st, _ = conv_args(t[7:])
                prog.append(("max", k, st if "s" in t[7:] else k))
            elif t.startswith("avgpool"):
                prog.append(("avg", int(t[7:])))
            elif t == "gap":
                prog.append(("gap",))
            elif t == "flatten":
                prog.append(("flat",))
            elif t.startswith("dense-"):
                n = int(t[6:])
                m = nn.LazyLinear(n)
                self.mods.append(m)
                prog.append(("mod", m))
                self.nclass = n
            else:
                raise ValueError(t)
        return prog

    def run(self, prog, x):
        for op in prog:
            if op[0] == "res":
                y = self.run(op[1], x)
                x = y + (self.run(op[2], x) if op[2] else x)
            elif op[0] == "mod":
                x = op[1](x)
            elif op[0] == "relu":
                x = F.relu(x)
            elif op[0] == "max":
                x = F.max_pool2d(x, op[1], op[2])
            elif op[0] == "avg":
                x = F.avg_pool2d(x, op[1])
            elif op[0] == "gap":
                x = x.mean((2, 3))
            elif op[0] == "flat":
                x = torch.flatten(x, 1)
        return x

    def forward(self, x):
        return self.run(self.prog, x.view(-1, *self.shape))


def state_of(net):
    return np.concatenate([b.detach().numpy().astype(np.float32).ravel()
                           for n, b in net.named_buffers()
                           if not n.endswith("num_batches_tracked")] or
                          [np.zeros(0, np.float32)])


def net_case(out, f, name, spec, batch):
    net = LayerNet(spec).double()
    nin = int(np.prod(net.shape))
    x = torch.rand(batch, nin).double()     # float32 values
    net(x)                                  # LazyLinear's shapes
    with torch.no_grad():
        for p in net.parameters():          # non-zero biases, gammas too
            p.add_(0.05 * torch.randn_like(p))
        for n, b in net.named_buffers():
            if n.endswith("running_mean"):
                b.copy_(torch.rand_like(b) - 0.5)
            elif n.endswith("running_var"):
                b.copy_(torch.rand_like(b) + 0.5)
        for t in list(net.parameters()) + list(net.buffers()):
            t.copy_(t.float().double())     # what spirt's f32 vector holds
    y = torch.randint(0, net.nclass, (batch,))
    net32 = LayerNet(spec)
    net32(x.float())
    net32.load_state_dict({k: v.float() for k, v in
                           net.state_dict().items()})
    state_in = state_of(net)
    params = list(net.parameters())
    pflat = flat(params)
    net.train()
    loss = F.cross_entropy(net(x), y)
    loss.backward()
    net32.train()
    F.cross_entropy(net32(x.float()), y).backward()
    tol, off = [], 0
    for p64, p32 in zip(params, net32.parameters()):
        err = float((p32.grad.double() - p64.grad).abs().max())
        tol.append((off, p64.numel(), max(1e-4, 1.1 * err)))
        off += p64.numel()
    net.eval()
    with torch.no_grad():
        eloss = F.cross_entropy(net(x), y)
    np.save(os.path.join(out, name + ".params.npy"), pflat)
    np.save(os.path.join(out, name + ".x.npy"), x.numpy().astype(np.float32))
    np.save(os.path.join(out, name + ".y.npy"), y.numpy().astype(np.int32))
    np.save(os.path.join(out, name + ".grad.npy"),
            flat([p.grad for p in params]))
    np.save(os.path.join(out, name + ".loss.npy"),
            np.array([loss.item()], dtype=np.float64))
    np.save(os.path.join(out, name + ".tol.npy"),
            np.array(tol, dtype=np.float64))
    np.save(os.path.join(out, name + ".state_in.npy"), state_in)
    np.save(os.path.join(out, name + ".state.npy"), state_of(net))
    np.save(os.path.join(out, name + ".evalloss.npy"),
            np.array([eloss.item()], dtype=np.float64))
    f.write("%s %s %d\n" % (name, spec, batch))


def flat(tensors):
    return np.concatenate(
        [t.detach().numpy().astype(np.float32).ravel() for t in tensors])


def main():
    warnings.filterwarnings("ignore", "Lazy modules")
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
    # the layer lists: inputs rounded to float32 first, as spirt reads
    # them, then float64 throughout
    torch.manual_seed(20261207)
    with open(os.path.join(out, "nets"), "w") as f:
        f.write("# NAME SPEC BATCH - written by "
                "contrib/python/make_grad_fixtures.py\n")
        for name, spec, batch in NETS:
            net_case(out, f, name, spec, batch)


if __name__ == "__main__":
    main()
