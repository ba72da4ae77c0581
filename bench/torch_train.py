"""torch_train.py - the PyTorch reference for bench/train.

Trains the models spirt-train trains, on Fashion-MNIST, and reports either
the time to a test accuracy or the time per step.  bench/train.sh sweeps
the thread configuration, batch size and learning rate with it and races
the best configuration against spirt.

usage: torch_train.py [-d seconds] [-i file] [-S seed] -j THREADS MODEL OPT
                      EPOCHS EVERY TARGET BATCH:LR...
       torch_train.py -j THREADS MODEL OPT steps N BATCH...

  THREADS  1    one thread (torch, OpenMP and OpenBLAS)
           2    two threads, OpenMP's default wait policy
           2p   two threads, OMP_WAIT_POLICY=PASSIVE
  MODEL    mlp | cnn | resnet8    OPT  sgd | momentum | adam
  EVERY    evaluate every EVERY training samples (the same sample
           intervals whatever the batch), and at each epoch's end
  TARGET   stop a configuration at the first evaluation reaching it
  -d S     give up a configuration once its training clock passes S
           seconds (it cannot beat a run that reached the target in S);
           S then falls to each configuration's time to the target
  -i FILE  start from the weights of a spirt model file (spirt's model@0,
           bench/torch_start.py), not PyTorch's default initialisation
  -S SEED  seed of the initialisation and the data order (default 1)
  TORCH_TRAIN_LOG=FILE  append each evaluation to FILE: batch steps lr
           train_seconds accuracy

For each BATCH:LR, from the same seed, one line:
  batch  lr  steps  train_seconds  accuracy  reached
at the first evaluation reaching TARGET (reached = 1), else at the last one
(reached = 0).  Evaluation time is excluded from train_seconds, as in
spirt-train's log.  The second form trains N steps of each BATCH (plus 5
not timed) and prints:  batch  ms_per_step (the mean, as spirt-train's
log gives it: seconds / steps).
"""
import gzip
import os
import sys
import time

THREADS = {"1": ("1", None), "2": ("2", None), "2p": ("2", "PASSIVE")}


def usage():
    sys.stderr.write(__doc__.split("\n\n")[2] + "\n")
    sys.exit(64)


# the thread configuration goes into the environment before torch (and its
# OpenMP and OpenBLAS) is loaded: both read it once, at load time
args = sys.argv[1:]
deadline = None
threads = None
init = None
seed = 1
while args and args[0].startswith("-"):
    if len(args) < 2:
        usage()
    if args[0] == "-d":
        deadline = float(args[1])
    elif args[0] == "-i":
        init = args[1]
    elif args[0] == "-S" and args[1].isdigit():
        seed = int(args[1])
    elif args[0] == "-j" and args[1] in THREADS:
        threads = args[1]
    else:
        usage()
    args = args[2:]
if threads is None or len(args) < 3:
    usage()
n, policy = THREADS[threads]
os.environ["OMP_NUM_THREADS"] = n
os.environ["OPENBLAS_NUM_THREADS"] = n
if policy:
    os.environ["OMP_WAIT_POLICY"] = policy
else:
    os.environ.pop("OMP_WAIT_POLICY", None)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torch_start  # noqa: E402

log = open(os.environ["TORCH_TRAIN_LOG"], "a") \
    if os.environ.get("TORCH_TRAIN_LOG") else None
D = os.environ.get("FMNIST", "/usr/share/datasets/fashion-mnist") + "/"


def idx(name, off):
    with gzip.open(D + name) as f:
        return np.frombuffer(f.read(), np.uint8, offset=off)


def images(name):
    x = idx(name, 16).reshape(-1, 1, 28, 28)
    return torch.tensor(x, dtype=torch.float32) / 255


def labels(name):
    return torch.tensor(idx(name, 8), dtype=torch.long)


def net_of(model):
    torch.manual_seed(seed)
    if model == "resnet8":      # batch normalisation: evaluate() sets eval
        net = torch_start.ResNet8()
    elif model == "mlp":
        net = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(),
                            nn.Linear(256, 128), nn.ReLU(),
                            nn.Linear(128, 10))
    else:
        net = nn.Sequential(nn.Conv2d(1, 32, 5), nn.ReLU(), nn.MaxPool2d(2),
                            nn.Conv2d(32, 64, 5), nn.ReLU(), nn.MaxPool2d(2),
                            nn.Flatten(), nn.Linear(1024, 10))
    if init:
        torch_start.load(net, init)
    return net


def opt_of(net, opt, lr):
    if opt == "sgd":
        return torch.optim.SGD(net.parameters(), lr=lr)
    if opt == "momentum":
        return torch.optim.SGD(net.parameters(), lr=lr, momentum=0.9)
    return torch.optim.Adam(net.parameters(), lr=lr)


def step(net, o, x, y):
    o.zero_grad()
    F.cross_entropy(net(x), y).backward()
    o.step()


def to_target(xtr, ytr, xte, yte, model, opt, epochs, every, target, cfg):
    batch, lr = cfg.split(":")
    batch, lr = int(batch), float(lr)
    net = net_of(model)
    o = opt_of(net, opt, lr)
    n = xtr.shape[0]
    nb = n // batch
    # evaluate every `every` samples, whatever the batch
    each = max(1, round(every / batch))
    steps, clock, acc = 0, 0.0, 0.0
    torch.manual_seed(seed)
    for _ in range(epochs):
        perm = torch.randperm(n)
        for b in range(nb):
            t0 = time.perf_counter()
            i = perm[b * batch:(b + 1) * batch]
            step(net, o, xtr[i], ytr[i])
            clock += time.perf_counter() - t0
            steps += 1
            if steps % each and b != nb - 1:
                continue
            acc = evaluate(net, xte, yte)
            if log:
                log.write("%d\t%d\t%g\t%.4f\t%.4f\n" % (batch, steps, lr,
                                                       clock, acc))
                log.flush()
            if target and acc >= target:
                return batch, lr, steps, clock, acc, 1
            if deadline is not None and clock > deadline:
                return batch, lr, steps, clock, acc, 0
    return batch, lr, steps, clock, acc, 0


def evaluate(net, xte, yte):
    """test accuracy, in evaluation mode (batch normalisation's running
    statistics), 1000 images at a time"""
    net.eval()
    with torch.no_grad():
        z = torch.cat([net(xte[i:i + 1000]) for i in
                       range(0, xte.shape[0], 1000)])
    net.train()
    return (z.argmax(1) == yte).float().mean().item()


def per_step(xtr, ytr, model, opt, nsteps, batch):
    net = net_of(model)
    o = opt_of(net, opt, 1e-3)
    perm = torch.randperm(xtr.shape[0])
    t = []
    for s in range(nsteps + 5):
        j = (s * batch) % (xtr.shape[0] - batch)
        i = perm[j:j + batch]
        t0 = time.perf_counter()
        step(net, o, xtr[i], ytr[i])
        if s >= 5:
            t.append(time.perf_counter() - t0)
    return 1e3 * sum(t) / len(t)


def main():
    model = args[0]
    if model not in ("mlp", "cnn", "resnet8"):
        usage()
    torch.set_num_threads(int(n))
    xtr = images("train-images-idx3-ubyte.gz")
    ytr = labels("train-labels-idx1-ubyte.gz")
    if len(args) > 3 and args[2] == "steps":
        for b in args[4:]:
            print("%s\t%.4f" % (b, per_step(xtr, ytr, model, args[1],
                                            int(args[3]), int(b))),
                  flush=True)
        return
    if len(args) < 6:
        usage()
    opt, epochs, every, target = args[1], int(args[2]), int(args[3]), \
        float(args[4])
    xte = images("t10k-images-idx3-ubyte.gz")
    yte = labels("t10k-labels-idx1-ubyte.gz")
    global deadline
    for cfg in args[5:]:
        r = to_target(xtr, ytr, xte, yte, model, opt, epochs, every, target,
                      cfg)
        print("%d\t%g\t%d\t%.4f\t%.4f\t%d" % r, flush=True)
        if r[5] and (deadline is None or r[3] < deadline):
            deadline = r[3]


if __name__ == "__main__":
    main()
