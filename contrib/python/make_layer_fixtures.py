#!/usr/bin/python3
# make_layer_fixtures.py - PyTorch float64 references for tests/unit/test_layers
#
# For each case below, draws float32 inputs from a fixed seed, runs the
# layer in PyTorch in float64 (forward, then backward of sum(out * dout))
# and writes into the output directory (default tests/data/layers):
#
#   cases           one line per case: NAME KIND SIZES...
#   tols            one line per expected array: NAME ARRAY ERR, ERR the
#                   max abs difference of float32 PyTorch (1 thread) from
#                   float64 on the same inputs; the test allows
#                   max(1e-4, 1.1 * ERR)
#   NAME.ARRAY.npy  f32, activations in spirt's "CBHW" order (C,B,H,W),
#                   parameters in torch's layouts
#
# Kinds, their sizes, inputs and expected arrays:
#   conv2d  B C H W OC k s p bias   x w [b] dout -> out dx dw [db]
#   dwconv  B C H W k s p bias      x w [b] dout -> out dx dw [db]
#   bn      B C H W                 x gamma beta rm rv dout ->
#           out dx dgamma dbeta rm1 rv1 (training mode, momentum 0.1,
#           eps 1e-5; rm1 rv1 the running statistics after the step)
#   bneval  B C H W                 x gamma beta rm rv dout ->
#           out dx dgamma dbeta
#   avgpool B C H W k               x dout -> out dx
#   gap     B C H W                 x dout -> out dx
#   maxpool B C H W k s             x dout -> out dx
#   residual B C H W                x x2 dout -> out dx dx2
# Run with Debian's python3 (python3-torch, python3-numpy):
#   /usr/bin/python3 contrib/python/make_layer_fixtures.py [outdir]
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

CASES = [
    ("conv_k3p1", "conv2d", (2, 3, 7, 6, 4, 3, 1, 1, 1)),
    ("conv_k3s2", "conv2d", (3, 2, 9, 8, 5, 3, 2, 1, 0)),
    ("conv_k1s2", "conv2d", (2, 4, 6, 7, 3, 1, 2, 0, 0)),
    ("conv_k5p2", "conv2d", (1, 2, 8, 7, 3, 5, 1, 2, 1)),
    ("dw_k3p1", "dwconv", (2, 4, 7, 7, 3, 1, 1, 1)),
    ("dw_k3s2", "dwconv", (3, 3, 8, 9, 3, 2, 1, 0)),
    ("bn", "bn", (3, 4, 5, 5)),
    ("bneval", "bneval", (2, 3, 4, 5)),
    ("avg_k2", "avgpool", (2, 3, 6, 7, 2)),
    ("avg_k3", "avgpool", (1, 2, 7, 8, 3)),
    ("gap", "gap", (2, 5, 4, 4)),
    ("max_k2", "maxpool", (2, 3, 6, 7, 2, 2)),
    ("max_k3s2", "maxpool", (1, 3, 9, 8, 3, 2)),
    ("max_ties", "maxpool", (2, 2, 7, 7, 3, 2)),     # inputs in {-1,0,1}
    ("residual", "residual", (2, 3, 4, 5)),
]


ACT = ("x", "x2", "dout")        # activations: (C,B,H,W) in the files


def cbhw(t):
    """A (B,C,H,W) tensor as spirt's (C,B,H,W) array."""
    return t.detach().permute(1, 0, 2, 3).contiguous().numpy()


def bchw(a):
    """spirt's (C,B,H,W) array as a (B,C,H,W) tensor."""
    return torch.from_numpy(a).permute(1, 0, 2, 3).contiguous()


def rnd(*shape, scale=1.0, shift=0.0):
    return (scale * torch.randn(*shape) + shift).float()


def run(kind, sz, inp, dtype):
    """The layer on inp's arrays in dtype: the expected arrays, in order."""
    t = {k: (bchw(v) if k in ACT else torch.from_numpy(v)).to(dtype)
         for k, v in inp.items()}
    for k in ("x", "x2", "w", "b", "gamma", "beta"):
        if k in t:
            t[k].requires_grad_(True)
    if kind in ("conv2d", "dwconv"):
        k, s, p = sz[-4:-1] if kind == "dwconv" else sz[5:8]
        groups = sz[1] if kind == "dwconv" else 1
        out = F.conv2d(t["x"], t["w"], t.get("b"), stride=s, padding=p,
                       groups=groups)
        out.backward(t["dout"])
        res = [("out", out), ("dx", t["x"].grad), ("dw", t["w"].grad)]
        if "b" in t:
            res.append(("db", t["b"].grad))
    elif kind in ("bn", "bneval"):
        rm, rv = t["rm"].clone(), t["rv"].clone()
        out = F.batch_norm(t["x"], rm, rv, t["gamma"], t["beta"],
                           training=(kind == "bn"), momentum=0.1, eps=1e-5)
        out.backward(t["dout"])
        res = [("out", out), ("dx", t["x"].grad),
               ("dgamma", t["gamma"].grad), ("dbeta", t["beta"].grad)]
        if kind == "bn":
            res += [("rm1", rm), ("rv1", rv)]
    elif kind == "avgpool":
        out = F.avg_pool2d(t["x"], sz[4])
        out.backward(t["dout"])
        res = [("out", out), ("dx", t["x"].grad)]
    elif kind == "gap":
        out = F.adaptive_avg_pool2d(t["x"], 1)
        out.backward(t["dout"])
        res = [("out", out), ("dx", t["x"].grad)]
    elif kind == "maxpool":
        out = F.max_pool2d(t["x"], sz[4], sz[5])
        out.backward(t["dout"])
        res = [("out", out), ("dx", t["x"].grad)]
    elif kind == "residual":
        out = t["x"] + t["x2"]
        out.backward(t["dout"])
        res = [("out", out), ("dx", t["x"].grad), ("dx2", t["x2"].grad)]
    else:
        raise ValueError(kind)
    return [(n, cbhw(v) if n in ("out", "dx", "dx2") else
             v.detach().numpy()) for n, v in res]


def inputs(name, kind, sz):
    """float32 inputs for a case, activations (C,B,H,W)."""
    B, C, H, W = sz[:4]
    x = rnd(B, C, H, W)
    if name.endswith("_ties"):          # equal maxima: the first one wins
        x = torch.round(x.clamp(-1, 1))
    inp = {}
    if kind == "conv2d":
        OC, k, s, p, bias = sz[4:]
        inp["w"] = rnd(OC, C, k, k, scale=0.3)
        if bias:
            inp["b"] = rnd(OC, scale=0.1)
        OH, OW = (H + 2 * p - k) // s + 1, (W + 2 * p - k) // s + 1
        dout = rnd(B, OC, OH, OW)
    elif kind == "dwconv":
        k, s, p, bias = sz[4:]
        inp["w"] = rnd(C, 1, k, k, scale=0.3)
        if bias:
            inp["b"] = rnd(C, scale=0.1)
        OH, OW = (H + 2 * p - k) // s + 1, (W + 2 * p - k) // s + 1
        dout = rnd(B, C, OH, OW)
    elif kind in ("bn", "bneval"):
        x = rnd(B, C, H, W, scale=2.0, shift=3.0)   # mean far from 0
        inp["gamma"] = rnd(C, scale=0.2, shift=1.0)
        inp["beta"] = rnd(C, scale=0.2)
        inp["rm"] = rnd(C, scale=0.5, shift=2.0)
        inp["rv"] = (0.5 + torch.rand(C) * 4).float()
        dout = rnd(B, C, H, W)
    elif kind == "avgpool":
        k = sz[4]
        dout = rnd(B, C, H // k, W // k)
    elif kind == "gap":
        dout = rnd(B, C, 1, 1)
    elif kind == "maxpool":
        k, s = sz[4:]
        dout = rnd(B, C, (H - k) // s + 1, (W - k) // s + 1)
    elif kind == "residual":
        inp["x2"] = cbhw(rnd(B, C, H, W))
        dout = rnd(B, C, H, W)
    inp["x"] = cbhw(x)
    inp["dout"] = cbhw(dout)
    for k in inp:
        if not isinstance(inp[k], np.ndarray):
            inp[k] = inp[k].numpy()
        inp[k] = inp[k].astype(np.float32)
    return inp


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/data/layers"
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(20261207)
    torch.set_num_threads(1)
    with open(os.path.join(out, "cases"), "w") as fc, \
            open(os.path.join(out, "tols"), "w") as ft:
        head = " - written by contrib/python/make_layer_fixtures.py\n"
        fc.write("# NAME KIND SIZES..." + head)
        ft.write("# NAME ARRAY ERR (float32 torch vs float64)" + head)
        for name, kind, sz in CASES:
            inp = inputs(name, kind, sz)
            for k, v in inp.items():
                np.save(os.path.join(out, "%s.%s.npy" % (name, k)), v)
            ref = run(kind, sz, inp, torch.float64)
            f32 = run(kind, sz, inp, torch.float32)
            for (n, v), (_, w) in zip(ref, f32):
                np.save(os.path.join(out, "%s.%s.npy" % (name, n)),
                        v.astype(np.float32))
                err = float(np.max(np.abs(w.astype(np.float64) - v)))
                ft.write("%s %s %.3e\n" % (name, n, err))
            fc.write("%s %s %s\n" % (name, kind, " ".join(map(str, sz))))


if __name__ == "__main__":
    main()
