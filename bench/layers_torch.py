#!/usr/bin/python3
# layers_torch.py - PyTorch's conv2d forward+backward, one thread, on the
# shapes bench/layers_bench times; same output format.
import sys
import time

import torch
import torch.nn.functional as F

torch.set_num_threads(1)
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 50
# layers_torch.py [reps] [--resnet8 [batch]]


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


# resnet8:1x28x28-10's convolutions (no bias: a bn follows each), as
# `layers_bench --net resnet8:1x28x28-10 --conv` times them: forward,
# backward's input gradient and its weight gradient apart
# (aten.convolution_backward's output mask), thread CPU time, the least
# of reps runs
RESNET8 = [  # C, H, OC, k, s, the input's gradient wanted
    (1, 28, 16, 3, 1, 0), (16, 28, 16, 3, 1, 1), (16, 28, 16, 3, 1, 1),
    (16, 28, 32, 3, 2, 1), (32, 14, 32, 3, 1, 1), (16, 28, 32, 1, 2, 1),
    (32, 14, 64, 3, 2, 1), (64, 7, 64, 3, 1, 1), (32, 14, 64, 1, 2, 1)]


def least(f, n):
    f()
    t = 1e9
    for _ in range(n):
        t0 = time.thread_time()
        f()
        t = min(t, time.thread_time() - t0)
    return 1e3 * t


def layers(B, n):
    for C, H, OC, k, s, din in RESNET8:
        x = torch.rand(B, C, H, H)
        w = torch.rand(OC, C, k, k)
        OH = (H + 2 * (k // 2) - k) // s + 1
        dy = torch.rand(B, OC, OH, OH)
        args = (dy, x, w, None, [s, s], [k // 2] * 2, [1, 1], False,
                [0, 0], 1)
        with torch.no_grad():
            f = least(lambda: F.conv2d(x, w, None, s, k // 2), n)
            bd = least(lambda: torch.ops.aten.convolution_backward(
                *args, [True, False, False]), n) if din else 0.0
            bw = least(lambda: torch.ops.aten.convolution_backward(
                *args, [False, True, False]), n)
            bb = least(lambda: torch.ops.aten.convolution_backward(
                *args, [bool(din), True, False]), n)
        print("torch conv%dx%d %dx%dx%d-%d/%d batch=%d fwd_ms=%.3f "
              "bwd_data_ms=%.3f bwd_weight_ms=%.3f bwd_ms=%.3f" % (
                  k, k, C, H, H, OC, s, B, f, bd, bw, bb))


if len(sys.argv) > 2 and sys.argv[2] == "--resnet8":
    layers(int(sys.argv[3]) if len(sys.argv) > 3 else 64, reps)
    sys.exit(0)


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
