"""ddp_elastic.py - the baseline of bench/failure.sh: PyTorch DDP (gloo)
under torchrun, the elastic agent a user would otherwise have.

Each rank trains the MLP 784-256-128-10 on its share of Fashion-MNIST
(one thread, SGD with momentum), rank 0 checkpoints every CKPT steps, and
every rank appends "step seconds" (time.time(), the clock the bench's
shell reads with date +%s.%N on the same host) to LOG.<rank> after each
step.  When a rank is killed, torchrun's agent sees it, stops the others
and restarts the whole group, which resumes from the last checkpoint.

usage: torchrun ... ddp_elastic.py LOG BATCH STEPS CKPT

DDP_INIT=FILE starts from the weights of a spirt model file (spirt's
model@0: bench/torch_start.py) instead of PyTorch's default.
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
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torch_start  # noqa: E402

D = os.environ.get("FMNIST", "/usr/share/datasets/fashion-mnist") + "/"


def idx(name, off):
    with gzip.open(D + name) as f:
        return np.frombuffer(f.read(), np.uint8, offset=off)


def main():
    log, batch, steps, ckpt = sys.argv[1], int(sys.argv[2]), \
        int(sys.argv[3]), int(sys.argv[4])
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, p = dist.get_rank(), dist.get_world_size()
    x = torch.tensor(idx("train-images-idx3-ubyte.gz", 16).reshape(-1, 784),
                     dtype=torch.float32) / 255
    y = torch.tensor(idx("train-labels-idx1-ubyte.gz", 8), dtype=torch.long)
    x, y = x[rank::p], y[rank::p]
    torch.manual_seed(1)
    net = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128),
                        nn.ReLU(), nn.Linear(128, 10))
    if os.environ.get("DDP_INIT"):
        torch_start.load(net, os.environ["DDP_INIT"])
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    start = 0
    path = log + ".ckpt"
    if os.path.exists(path):
        st = torch.load(path)
        net.load_state_dict(st["net"])
        opt.load_state_dict(st["opt"])
        start = st["step"]
    model = nn.parallel.DistributedDataParallel(net)
    out = open("%s.%d" % (log, rank), "a", buffering=1)
    n = x.shape[0]
    for t in range(start, steps):
        i = (t * batch) % (n - batch)
        loss = F.cross_entropy(model(x[i:i + batch]), y[i:i + batch])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and (t + 1) % ckpt == 0:
            torch.save({"net": net.state_dict(), "opt": opt.state_dict(),
                        "step": t + 1}, path + ".tmp")
            os.replace(path + ".tmp", path)
        out.write("%d %.6f\n" % (t + 1, time.time()))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
