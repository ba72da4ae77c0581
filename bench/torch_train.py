"""torch_train.py - the PyTorch reference for bench/train.

Trains the same models on Fashion-MNIST with the same global batch,
optimiser and learning rate as the spirt workflow, one thread, and prints
tab-separated progress lines:  step  train_seconds  test_accuracy
Evaluation time is excluded from train_seconds (as in spirt-train's log).

usage: torch_train.py MODEL BATCH OPT LR EPOCHS EVAL_EVERY TARGET
  MODEL  mlp | cnn          OPT  sgd | momentum | adam
  stops at the first evaluation reaching TARGET accuracy (0 = never)
"""
import gzip
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

D = "/usr/share/datasets/fashion-mnist/"


def idx(name, off):
    with gzip.open(D + name) as f:
        return np.frombuffer(f.read(), np.uint8, offset=off)


def main():
    model, batch, opt, lr, epochs, every, target = sys.argv[1:8]
    batch, lr, epochs, every, target = (int(batch), float(lr), int(epochs),
                                        int(every), float(target))
    torch.set_num_threads(1)
    torch.manual_seed(1)
    xtr = torch.tensor(idx("train-images-idx3-ubyte.gz", 16).reshape(-1, 1, 28, 28),
                       dtype=torch.float32) / 255
    ytr = torch.tensor(idx("train-labels-idx1-ubyte.gz", 8), dtype=torch.long)
    xte = torch.tensor(idx("t10k-images-idx3-ubyte.gz", 16).reshape(-1, 1, 28, 28),
                       dtype=torch.float32) / 255
    yte = torch.tensor(idx("t10k-labels-idx1-ubyte.gz", 8), dtype=torch.long)
    if model == "mlp":
        net = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(),
                            nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
    else:
        net = nn.Sequential(nn.Conv2d(1, 32, 5), nn.ReLU(), nn.MaxPool2d(2),
                            nn.Conv2d(32, 64, 5), nn.ReLU(), nn.MaxPool2d(2),
                            nn.Flatten(), nn.Linear(1024, 10))
    if opt == "sgd":
        o = torch.optim.SGD(net.parameters(), lr=lr)
    elif opt == "momentum":
        o = torch.optim.SGD(net.parameters(), lr=lr, momentum=0.9)
    else:
        o = torch.optim.Adam(net.parameters(), lr=lr)
    n = xtr.shape[0]
    step, clock = 0, 0.0
    for ep in range(epochs):
        perm = torch.randperm(n)
        for b in range(n // batch):
            t0 = time.perf_counter()
            i = perm[b * batch:(b + 1) * batch]
            o.zero_grad()
            loss = F.cross_entropy(net(xtr[i]), ytr[i])
            loss.backward()
            o.step()
            clock += time.perf_counter() - t0
            step += 1
            if step % every == 0 or b == n // batch - 1:
                with torch.no_grad():
                    acc = (net(xte).argmax(1) == yte).float().mean().item()
                print("%d\t%.4f\t%.4f" % (step, clock, acc), flush=True)
                if target and acc >= target:
                    return


if __name__ == "__main__":
    main()
