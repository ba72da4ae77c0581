#!/usr/bin/python3
# layers_torch.py - PyTorch's conv2d forward+backward, one thread, on the
# shapes bench/layers_bench times; same output format.
import sys
import time

import torch
import torch.nn.functional as F

torch.set_num_threads(1)
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 50


def bench(dw, B, C, H, k, n):
    x = torch.rand(B, C, H, H, requires_grad=True)
    w = torch.rand(C, 1 if dw else C, k, k, requires_grad=True)
    b = torch.rand(C, requires_grad=True)
    dout = torch.rand(B, C, H, H)
    t = []
    for i in range(n + 3):
        t0 = time.perf_counter()
        x.grad = w.grad = b.grad = None
        out = F.conv2d(x, w, b, padding=k // 2, groups=C if dw else 1)
        out.backward(dout)
        if i >= 3:
            t.append(time.perf_counter() - t0)
    t.sort()
    print("torch %s%dx%d %dx%dx%d batch=%d fwdbwd_ms=%.4f" % (
        "dwconv" if dw else "conv", k, k, C, H, H, B, 1e3 * t[len(t) // 2]))


bench(0, 64, 16, 28, 3, reps)
bench(1, 64, 16, 28, 3, reps)
bench(0, 64, 32, 14, 3, reps)
bench(0, 64, 16, 28, 1, reps)
bench(0, 64, 32, 14, 1, reps)
