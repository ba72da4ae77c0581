#!/usr/bin/python3
# layers_torch.py - PyTorch's conv2d forward+backward, one thread, on the
# shapes bench/layers_bench times; same output format.
import sys
import time

import torch
import torch.nn.functional as F

torch.set_num_threads(1)
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 50


def bench(dw, B, C, H, k, n, OC=None, s=1):
    OC = OC or C
    x = torch.rand(B, C, H, H, requires_grad=True)
    w = torch.rand(OC, 1 if dw else C, k, k, requires_grad=True)
    b = torch.rand(OC, requires_grad=True)
    OH = (H + 2 * (k // 2) - k) // s + 1
    dout = torch.rand(B, OC, OH, OH)
    t = []
    for i in range(n + 3):
        t0 = time.perf_counter()
        x.grad = w.grad = b.grad = None
        out = F.conv2d(x, w, b, stride=s, padding=k // 2,
                       groups=C if dw else 1)
        out.backward(dout)
        if i >= 3:
            t.append(time.perf_counter() - t0)
    t.sort()
    print("torch %s%dx%d %dx%dx%d%s batch=%d fwdbwd_ms=%.4f" % (
        "dwconv" if dw else "conv", k, k, C, H, H,
        "-%d/%d" % (OC, s) if OC != C or s != 1 else "", B,
        1e3 * t[len(t) // 2]))


bench(0, 64, 16, 28, 3, reps)
bench(1, 64, 16, 28, 3, reps)
bench(0, 64, 32, 14, 3, reps)
bench(0, 64, 16, 28, 1, reps)
bench(0, 64, 32, 14, 1, reps)
# the rest of resnet8's: "-OC/s" where they differ from C, 1
bench(0, 64, 1, 28, 3, reps, 16)
bench(0, 64, 16, 28, 3, reps, 32, 2)
bench(0, 64, 16, 28, 1, reps, 32, 2)
bench(0, 64, 32, 14, 3, reps, 64, 2)
bench(0, 64, 32, 14, 1, reps, 64, 2)
bench(0, 64, 64, 7, 3, reps)
