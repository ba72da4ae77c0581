#!/usr/bin/python3
# grad_torch.py - PyTorch's forward+backward per minibatch, one thread, on
# the models bench/grad_bench times; same output format.  Run it with the
# OPENBLAS_CORETYPE spirt uses (bench/grad.sh does), so both sides use the
# same OpenBLAS kernels.
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_start

torch.set_num_threads(1)
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 200


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(784, 256), nn.Linear(256, 128)
        self.fc3 = nn.Linear(128, 10)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 32, 5), nn.Conv2d(32, 64, 5)
        self.fc1 = nn.Linear(1024, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x.view(-1, 1, 28, 28))), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc1(torch.flatten(x, 1))


# spirt's resnet8:1x28x28-10 (spirt-model(5)), in training mode: the
# module the race loads spirt's model@0 into
ResNet8 = torch_start.ResNet8


class MobileNet(nn.Module):
    """spirt's mobilenet:1x28x28-10 (spirt-model(5)), in training mode:
    depthwise-separable blocks of 16, 32, 32, 64, 64 channels."""

    def __init__(self):
        super().__init__()
        L, c = [nn.Conv2d(1, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16),
                nn.ReLU()], 16
        for o in (16, 32, 32, 64, 64):
            L += [nn.Conv2d(c, c, 3, 2 if o > c else 1, 1, groups=c,
                            bias=False), nn.BatchNorm2d(c), nn.ReLU(),
                  nn.Conv2d(c, o, 1, bias=False), nn.BatchNorm2d(o),
                  nn.ReLU()]
            c = o
        self.f = nn.Sequential(*L)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc(self.f(x.view(-1, 1, 28, 28)).mean((2, 3)))


def bench(name, net, batch, n):
    x = torch.rand(batch, 784)
    y = torch.randint(0, 10, (batch,))
    t, c = [], []
    for i in range(n + 5):
        t0, c0 = time.perf_counter(), time.thread_time()
        net.zero_grad(set_to_none=True)
        F.cross_entropy(net(x), y).backward()
        if i >= 5:
            t.append(time.perf_counter() - t0)
            c.append(time.thread_time() - c0)
    t.sort()
    c.sort()
    # cpu_ms: this thread's CPU time, other processes' load not counted
    print("torch %s batch=%d fwdbwd_ms=%.4f cpu_ms=%.4f" % (
        name, batch, 1e3 * t[len(t) // 2], 1e3 * c[len(c) // 2]))


if len(sys.argv) > 2:    # one model: grad_torch.py reps spec [batch]
    nets = {"mlp:784-256-128-10": MLP, "cnn:1x28x28-32-64-10": CNN,
            "resnet8:1x28x28-10": ResNet8,
            "mobilenet:1x28x28-10": MobileNet}
    bench(sys.argv[2], nets[sys.argv[2]](),
          int(sys.argv[3]) if len(sys.argv) > 3 else 64, reps)
    sys.exit(0)
bench("mlp:784-256-128-10", MLP(), 64, reps)
bench("mlp:784-256-128-10", MLP(), 256, reps)
bench("cnn:1x28x28-32-64-10", CNN(), 64, reps // 4 + 3)
bench("resnet8:1x28x28-10", ResNet8(), 64, reps // 8 + 3)
bench("mobilenet:1x28x28-10", MobileNet(), 64, reps // 8 + 3)
