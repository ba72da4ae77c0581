"""ddp_train.py - PyTorch DDP (gloo), the reference for bench/peer.

Trains the MLP 784-256-128-10 on Fashion-MNIST in P processes under
DistributedDataParallel with the gloo backend, each process one thread and
its own share of the data (DistributedSampler), at a global batch of
P x BATCH, SGD with momentum 0.9 and a constant lr: what spirt's P peers
do with spirt-train --peers.

usage: ddp_train.py P BATCH LR EVERY TARGET STEPS

  P       processes (ranks), each started here on 127.0.0.1; with
          DDP_RANK=r in the environment, only rank r, here, its
          rendezvous at MASTER_ADDR:MASTER_PORT (bench/peer.sh starts
          one per network namespace, with GLOO_SOCKET_IFNAME=eth0)
  BATCH   samples per process per step (global batch P x BATCH)
  EVERY   evaluate (rank 0, all ranks waiting) every EVERY steps
  TARGET  stop at the first evaluation reaching it (0: never)
  STEPS   at most this many steps

DDP_SEED (default 1) seeds the initialisation and the data order.
DDP_INIT=FILE starts from the weights of a spirt model file instead of
PyTorch's default initialisation (bench/torch_start.py; bench/peer.sh
passes spirt's model@0 of the same seed, so both sides start alike).

DDP_LOCAL=H (default 0: DDP) trains by local SGD instead, what
spirt-train --every H does: no DistributedDataParallel, each process
steps its own copy of the model with its own optimiser (momentum) on its
own batches, and after every H-th step the processes average their
parameters (torch.distributed's model-averaging utility, one allreduce
of the flattened parameters: post-local SGD's averager without its
warm-up).  EVERY should be a multiple of H, so that rank 0 evaluates an
averaged model.

Prints one line, from rank 0:
  steps  train_seconds  accuracy  reached  ms_per_step
train_seconds leaves the evaluations out, as spirt-train's log does.
"""
import gzip
import os
import sys
import time

os.environ["OMP_NUM_THREADS"] = "1"
os.environ["OPENBLAS_NUM_THREADS"] = "1"

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torch_start  # noqa: E402
from torch.distributed.algorithms.model_averaging.utils import \
    average_parameters  # noqa: E402

D = os.environ.get("FMNIST", "/usr/share/datasets/fashion-mnist") + "/"


def idx(name, off):
    with gzip.open(D + name) as f:
        return np.frombuffer(f.read(), np.uint8, offset=off)


def images(name):
    x = idx(name, 16).reshape(-1, 784)
    return torch.tensor(x, dtype=torch.float32) / 255


def labels(name):
    return torch.tensor(idx(name, 8), dtype=torch.long)


def run(rank, p, batch, lr, every, target, steps, port, q):
    torch.set_num_threads(1)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(port))
    dist.init_process_group("gloo", rank=rank, world_size=p)
    seed = int(os.environ.get("DDP_SEED", "1"))
    torch.manual_seed(seed)
    net = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128),
                        nn.ReLU(), nn.Linear(128, 10))
    if os.environ.get("DDP_INIT"):
        torch_start.load(net, os.environ["DDP_INIT"])
    local = int(os.environ.get("DDP_LOCAL", "0"))
    if local > 0:
        # the same start everywhere (DDP broadcasts rank 0's)
        for v in net.parameters():
            dist.broadcast(v.data, 0)
        ddp = net
    else:
        ddp = nn.parallel.DistributedDataParallel(net)
    o = torch.optim.SGD(ddp.parameters(), lr=lr, momentum=0.9)
    xtr = images("train-images-idx3-ubyte.gz")
    ytr = labels("train-labels-idx1-ubyte.gz")
    xte = images("t10k-images-idx3-ubyte.gz")
    yte = labels("t10k-labels-idx1-ubyte.gz")
    # this rank's share, reshuffled each epoch (DistributedSampler's way)
    n = xtr.shape[0] // p
    nb = n // batch
    g = torch.Generator()
    t, clock, acc, reached, epoch = 0, 0.0, 0.0, 0, 0
    while t < steps and not reached:
        g.manual_seed(1000 * seed + epoch)
        perm = torch.randperm(xtr.shape[0], generator=g)[rank::p][:n]
        for b in range(nb):
            dist.barrier()
            t0 = time.perf_counter()
            i = perm[b * batch:(b + 1) * batch]
            o.zero_grad()
            F.cross_entropy(ddp(xtr[i]), ytr[i]).backward()
            o.step()
            t += 1
            if local > 0 and t % local == 0:
                average_parameters(net.parameters(), dist.group.WORLD)
            clock += time.perf_counter() - t0
            if t % every == 0 or t == steps:
                if rank == 0:
                    with torch.no_grad():
                        acc = (net(xte).argmax(1) == yte).float().mean()
                        acc = acc.item()
                flag = torch.tensor([1 if target and acc >= target else 0])
                dist.broadcast(flag, 0)
                reached = int(flag.item())
            if reached or t >= steps:
                break
        epoch += 1
    if rank == 0:
        q.put("%d\t%.4f\t%.4f\t%d\t%.3f" % (t, clock, acc, reached,
                                            1e3 * clock / t))
    dist.destroy_process_group()


def main():
    if len(sys.argv) != 7:
        sys.stderr.write(__doc__.split("\n\n")[2] + "\n")
        sys.exit(64)
    p, batch = int(sys.argv[1]), int(sys.argv[2])
    lr, every = float(sys.argv[3]), int(sys.argv[4])
    target, steps = float(sys.argv[5]), int(sys.argv[6])
    port = 29500 + os.getpid() % 1000
    if "DDP_RANK" in os.environ:
        class Line:
            def put(self, line):
                print(line, flush=True)
        run(int(os.environ["DDP_RANK"]), p, batch, lr, every, target,
            steps, port, Line())
        return
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=run, args=(r, p, batch, lr, every, target,
                                           steps, port, q))
             for r in range(p)]
    for pr in procs:
        pr.start()
    line = q.get(timeout=1800)
    for pr in procs:
        pr.join()
    print(line, flush=True)


if __name__ == "__main__":
    main()
