#!/usr/bin/env python3
"""softmax_fn.py - a gradient function of your own, in spirt-grad's place.

The contract is spirt-function(7); this is a minimal function that keeps
it, in Python with NumPy only: softmax regression (spirt-model(5)'s
softmax:D:K, weights [K, D] then biases [K]) on the store's data set.

    softmax_fn.py [-q] [--serve] [-d dataset] -m model [-t step]
                  [-w worker] [-b batch] [-S seed]

spirt-train runs it as

    spirt-train --function "python3 softmax_fn.py" ...          (warm)
    spirt-train --cold --function "python3 softmax_fn.py" ...   (cold)

Warm (--serve) it reads "step [worker]" lines on stdin and answers each
with one line on stdout; cold it computes the gradient of -t and -w.
It reads the model with spirt-store get and its minibatch with
spirt-store batch (the store is $SPIRT_STORE, a path or a peer's URL),
and writes its gradient with spirt-store put, a record made by
contrib/python/spirt_tensor.py.
"""
import ctypes
import os
import re
import signal
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "contrib", "python"))
import spirt_tensor  # noqa: E402

PROG = "softmax_fn.py"
# exit codes (spirt(7)): each is also the code of an error answer
USAGE, DATAERR, NOINPUT, UNAVAILABLE, SOFTWARE, IOERR = 64, 65, 66, 69, 70, 74


class Fail(Exception):
    """A failure of one invocation: its exit code and message."""

    def __init__(self, code, msg):
        super().__init__(msg)
        self.code = code


def warn(msg):
    sys.stderr.write("%s: %s\n" % (PROG, msg))
    sys.stderr.flush()


# ---- the driver: SPIRT_PARENT is the pid of the process that started
# this one (spirt-train); this function ends with it, as spirt's tools do
# (Linux), and the tools it starts itself are its own children ----
def parent_watch():
    ppid = os.environ.pop("SPIRT_PARENT", None)
    if ppid is None:
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PDEATHSIG
    except (OSError, AttributeError):
        pass
    if not ppid.isdigit() or os.getppid() != int(ppid):
        warn("SPIRT_PARENT %s: that process, which started this one, is gone"
             % ppid)
        sys.exit(75)


# ---- the store, through spirt-store (local path or URL alike) ----
def get(key):
    """The record under key, as a spirt_tensor.Record."""
    p = subprocess.run(["spirt-store", "get", key], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if p.returncode != 0:
        msg = p.stderr.decode(errors="replace").strip().splitlines()
        raise Fail(p.returncode, msg[-1] if msg else key + ": cannot read")
    try:
        return spirt_tensor.read_record(_Bytes(p.stdout))
    except (spirt_tensor.RecordError, ValueError) as e:
        raise Fail(DATAERR, "%s: %s" % (key, e))


class _Bytes:
    def __init__(self, b):
        self.b, self.i = b, 0

    def read(self, n):
        r = self.b[self.i:self.i + n]
        self.i += len(r)
        return r


def put(key, record):
    p = subprocess.run(["spirt-store", "put", key], input=record,
                       stderr=subprocess.PIPE)
    if p.returncode != 0:
        msg = p.stderr.decode(errors="replace").strip().splitlines()
        raise Fail(p.returncode, msg[-1] if msg else key + ": cannot write")


# ---- the minibatch: spirt-store batch serves the samples of (step,
# worker) that spirt-grad takes (docs/contracts.md, "The minibatch rule":
# the assignment in force, with its reassignments after a death, the
# shards' orders of the epoch), as two records: x float32 [B, ...] and y
# int32 [B], each with the assignment's revision ----
def minibatch(opts, step, worker):
    """(x, y, revision) of (step, worker)."""
    p = subprocess.run(["spirt-store", "batch", "-d", opts["dataset"],
                        "-b", str(opts["batch"]), "-S", str(opts["seed"]),
                        "-t", str(step), "-w", str(worker)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        msg = p.stderr.decode(errors="replace").strip().splitlines()
        raise Fail(p.returncode, msg[-1] if msg else "step %d: no batch"
                   % step)
    try:
        f = _Bytes(p.stdout)
        x, y = spirt_tensor.read_record(f), spirt_tensor.read_record(f)
    except (spirt_tensor.RecordError, ValueError) as e:
        raise Fail(DATAERR, "step %d: the batch: %s" % (step, e))
    if x is None or y is None:
        raise Fail(DATAERR, "step %d: the batch: not two records" % step)
    xs = np.asarray(x.array, dtype=np.float64)
    return xs.reshape(xs.shape[0], -1), np.asarray(y.array, np.int64), \
        x.revision


# ---- the model: softmax regression and its gradient ----
def gradient(spec, params, x, y):
    m = re.fullmatch(r"softmax:([1-9][0-9]*):([1-9][0-9]*)", spec)
    if not m:
        raise Fail(DATAERR, "model %r: this function knows softmax:D:K only"
                   % spec)
    D, K = int(m.group(1)), int(m.group(2))
    if params.size != K * D + K or x.shape[1] != D:
        raise Fail(DATAERR, "model %s: %d parameters, data of %d features"
                   % (spec, params.size, x.shape[1]))
    if y.min() < 0 or y.max() >= K:
        raise Fail(DATAERR, "labels outside 0..%d" % (K - 1))
    p = params.astype(np.float64)
    W, b = p[:K * D].reshape(K, D), p[K * D:]
    z = x @ W.T + b
    z -= z.max(axis=1, keepdims=True)
    e = np.exp(z)
    prob = e / e.sum(axis=1, keepdims=True)
    n = len(y)
    loss = float(-np.log(prob[np.arange(n), y] + 1e-30).mean())
    d = prob
    d[np.arange(n), y] -= 1
    d /= n
    g = np.concatenate([(d.T @ x).ravel(), d.sum(axis=0)])
    return g.astype(np.float32), loss


def invoke(opts, step, worker):
    """One invocation: the gradient of (step, worker) into the store."""
    m = get("model/%s@%d" % (opts["model"], step))
    x, y, rev = minibatch(opts, step, worker)
    g, loss = gradient(m.name, np.asarray(m.array).ravel(), x, y)
    rec = spirt_tensor.encode(g, name=m.name, step=step, origin=worker,
                              samples=len(y), loss=loss, revision=rev)
    put("grad/%d/%d" % (step, worker), rec)
    return len(y), loss


# ---- the warm protocol (spirt-function(7)) ----
NUM = rb"(0|[1-9][0-9]*)"
REQ = re.compile(NUM + rb"(?: " + NUM + rb")?")


def serve(opts):
    worst, lineno = 0, 0
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return worst
        lineno += 1
        m = REQ.fullmatch(line[:-1]) if line.endswith(b"\n") else None
        step = worker = None
        if m and len(line) <= 256:
            step = int(m.group(1))
            worker = int(m.group(2)) if m.group(2) else opts["worker"]
        if step is None or step > 2**64 - 2 or worker > 2**32 - 2:
            warn('stdin:%d: "%s": not a request' % (
                lineno, line[:255].rstrip(b"\n").decode(errors="replace")))
            answer("error=%d" % USAGE)
            worst = max(worst, USAGE)
            continue
        try:
            n, loss = invoke(opts, step, worker)
            answer("step=%d worker=%d samples=%d loss=%.9g"
                   % (step, worker, n, loss))
        except Fail as e:
            warn(str(e))
            answer("step=%d worker=%d error=%d" % (step, worker, e.code))
            worst = max(worst, e.code)


def answer(s):
    sys.stdout.write(s + "\n")
    sys.stdout.flush()


def usage():
    sys.stderr.write("usage: %s [-q] [--serve] [-d dataset] -m model "
                     "[-t step] [-w worker] [-b batch] [-S seed]\n" % PROG)
    sys.exit(USAGE)


def main(argv):
    opts = dict(model=None, step=None, worker=0, batch=64, seed=0,
                dataset="train", serve=False)
    args = list(argv)
    names = {"-m": "model", "-t": "step", "-w": "worker", "-b": "batch",
             "-S": "seed", "-d": "dataset"}
    while args:
        a = args.pop(0)
        if a in ("-q", "--quiet"):
            continue
        if a in ("-i", "--serve"):
            opts["serve"] = True
        elif a in names and args:
            v = args.pop(0)
            if a not in ("-m", "-d"):
                if not re.fullmatch(r"0|[1-9][0-9]{0,18}", v):
                    warn("%s: invalid number %r" % (a, v))
                    usage()
                v = int(v)
            opts[names[a]] = v
        else:
            usage()
    if not opts["model"] or opts["batch"] < 1 or \
            (opts["step"] is None and not opts["serve"]):
        usage()
    parent_watch()
    try:
        if opts["serve"]:
            return serve(opts)
        invoke(opts, opts["step"], opts["worker"])
        return 0
    except Fail as e:
        warn(str(e))
        return e.code


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BrokenPipeError:
        sys.exit(IOERR)
