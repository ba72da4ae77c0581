"""bench/adapter.py - spirt-torch's warm step against a plain PyTorch loop.

    python3 bench/adapter.py STORE MODULE MODEL BATCH ROUNDS N [BEFORE]

Three warm processes, each asked "t 0" on its stdin and answering a
line: a plain PyTorch training loop (this script run with --plain: its
K minibatches in memory, gradients zeroed, forward, the module's loss,
backward, an SGD update) with malloc set as spirt-torch sets it
(plain), the same loop with malloc left alone (untuned), and one
`spirt-torch grad -i` (the same module; its model and the batch of
(t, 0) read, the gradient computed and written, through its spirt-store
pipe).  All start from the same bytes, model/MODEL@0 (the adapter reads
model@t, that record again with step t); all take the batches
spirt-store serves for steps 0..K-1 of worker 0, in the same order; all
set OMP_NUM_THREADS and OPENBLAS_NUM_THREADS to 1 before torch loads
and torch.set_num_threads(1); all, and this script, run pinned to one
CPU (BENCH_CPU, default the last this script may use).  Before timing,
each answers steps 0..K-1 once: the losses at model@0 must agree (the
same work on the same data).

ROUNDS rounds; in each, every process runs N consecutive steps (a turn),
the round led by the next in turn.  A step is timed from the request's
write to its answer (wall) and by the CPU of the process and its live
children (their threads' run time from /proc/PID/task/TID/schedstat,
nanoseconds: the function's and its spirt-store pipe's); its minor page
faults counted too.  Reported: medians with the quartiles, and the ratio
of each round's medians (warm / plain and the others: neighbours in
time under the same load), its median and quartiles.  With BEFORE, a
directory holding another version's spirt package (python/ of an older
tree), a fourth process runs that one in the same rounds, over the
spirt-store beside that python/ if there is one, and warm / before is
reported too (this tree's function against that one, round by round).

Then the cold start, min(ROUNDS, 5) rounds of one invocation each,
interleaved: python3 alone, python3 importing torch, python3 importing
torch and building the module, and `spirt-torch grad -t 0 -o /dev/null`
(all of it: its options, torch, the module, a spirt-store pipe, one
gradient); wall and CPU (wait4), medians (quartiles).
"""
import os
import statistics
import subprocess
import sys
import time

K = 8           # distinct steps (batches), asked in turn

if len(sys.argv) > 1 and sys.argv[1] == "--plain":
    # ---- the plain loop, as a warm process (before torch loads) ----
    store, module, model, batch, k, keep = sys.argv[2:8]
    batch, k = int(batch), int(k)
    os.environ["OMP_NUM_THREADS"] = os.environ["OPENBLAS_NUM_THREADS"] = "1"
    if keep == "keep":
        # malloc as spirt-torch sets it (its keep_memory())
        from spirt.torch import keep_memory
        keep_memory()
    import io
    import numpy as np
    import torch
    import torch.nn.functional as F
    from spirt import tensor

    torch.set_num_threads(1)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    env = dict(os.environ, SPIRT_STORE=store)

    def out(*args):
        return subprocess.run(["spirt-store"] + list(args), env=env,
                              check=True, stdout=subprocess.PIPE).stdout

    xs, ys = [], []
    for t in range(k):
        f = io.BytesIO(out("batch", "-t", str(t), "-w", "0", "-b",
                           str(batch), "--npy"))
        xs.append(torch.from_numpy(np.load(f)))
        ys.append(torch.from_numpy(np.load(f).astype(np.int64)))
    sys.path.insert(0, os.path.dirname(os.path.abspath(module)))
    mod = __import__(os.path.basename(module)[:-3])
    lossf = mod.loss() if hasattr(mod, "loss") else F.cross_entropy
    torch.manual_seed(0)
    net = mod.model()
    params = list(net.parameters())
    init = tensor.decode(out("get", "model/%s@0" % model))[0].array
    v, at = torch.from_numpy(init.copy()), 0
    with torch.no_grad():
        for p in params:
            p.copy_(v[at:at + p.numel()].view_as(p))
            at += p.numel()
    net.train()
    seen = set()
    for line in sys.stdin:
        t = int(line.split()[0]) % k
        for p in params:
            p.grad = None
        loss = lossf(net(xs[t]), ys[t])
        loss.backward()
        # the losses at model@0, each batch's first: no update until the
        # K checks are done
        if len(seen) == k:
            with torch.no_grad():
                for p in params:
                    p.add_(p.grad, alpha=-0.01)
        seen.add(t)
        sys.stdout.write("step=%d worker=0 samples=%d loss=%.9g\n" % (
            t, batch, float(loss)))
        sys.stdout.flush()
    sys.exit(0)

# ---- the driver ----
store, module, model, batch, rounds, n = sys.argv[1:7]
before = sys.argv[7] if len(sys.argv) > 7 else None
batch, rounds, n = int(batch), int(rounds), int(n)
tree = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(tree, "python"))
from spirt import tensor  # noqa: E402

cpus = sorted(os.sched_getaffinity(0))
cpu_pin = int(os.environ.get("BENCH_CPU", cpus[-1]))
os.sched_setaffinity(0, {cpu_pin})     # the processes started inherit it
env = dict(os.environ, SPIRT_STORE=store, OMP_NUM_THREADS="1",
           OPENBLAS_NUM_THREADS="1")
env.pop("SPIRT_THREADS", None)


def store_cmd(*args, data=None):
    return subprocess.run(["spirt-store"] + list(args), env=env, input=data,
                          check=True, stdout=subprocess.PIPE).stdout


# model@t for t < K: model@0's record again, its step t (and its state)
for kind in ("model", "mstate"):
    if kind == "mstate" and not store_cmd("ls", "mstate/%s@0" % model):
        break
    r = tensor.decode(store_cmd("get", "%s/%s@0" % (kind, model)))[0]
    have = store_cmd("ls", "%s/%s@" % (kind, model)).decode().split()
    for t in range(1, K):
        key = "%s/%s@%d" % (kind, model, t)
        if key not in have:
            store_cmd("put", key, "-", data=tensor.encode(
                r.array, name=r.name, step=t))


def start(name, pythonpath=None):
    """A warm process: the plain loop, this tree's spirt-torch, or the
    spirt package at pythonpath"""
    e = dict(env)
    if name in ("plain", "untuned"):
        e["PYTHONPATH"] = os.path.join(tree, "python")
        cmd = [sys.executable, os.path.abspath(__file__), "--plain", store,
               module, model, str(batch), str(K),
               "keep" if name == "plain" else "-"]
    else:
        cmd = ["spirt-torch"]
        if pythonpath:
            e["PYTHONPATH"] = pythonpath
            old = os.path.dirname(os.path.abspath(pythonpath))
            if os.access(os.path.join(old, "spirt-store"), os.X_OK):
                e["PATH"] = old + os.pathsep + e["PATH"]
            cmd = [sys.executable, "-m", "spirt.torch"]
        cmd += ["grad", "-i", "-q", "-m", model, "--module", module,
                "-b", str(batch)]
    return subprocess.Popen(cmd, env=e, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)


def ask(p, t):
    p.stdin.write(b"%d 0\n" % t)
    p.stdin.flush()
    ans = p.stdout.readline()
    if not ans.startswith(b"step=%d worker=0 samples=" % t):
        sys.exit("bench/adapter: answer %r" % ans)
    return ans


def tree_pids(pid):
    """pid and its descendants, now"""
    out = [pid]
    try:
        for task in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, task)) as f:
                for k in f.read().split():
                    out += tree_pids(int(k))
    except OSError:
        pass
    return out


def usage(pids):
    """(CPU seconds, minor faults) of pids: their threads' run time"""
    ns, flt = 0, 0
    for pid in pids:
        try:
            for task in os.listdir("/proc/%d/task" % pid):
                with open("/proc/%d/task/%s/schedstat" % (pid, task)) as f:
                    ns += int(f.read().split()[0])
            with open("/proc/%d/stat" % pid) as f:
                flt += int(f.read().rsplit(")", 1)[1].split()[7])
        except OSError:
            pass
    return ns / 1e9, flt


def cpu_name():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


procs = {"plain": start("plain"), "warm": start("warm"),
         "untuned": start("untuned")}
if before:
    procs["before"] = start("before", before)
# steps 0..K-1 at model@0, once each: the same losses, or not the same
# work (the adapter's first requests also load what they load)
first = {k: [ask(p, t).split(b"loss=")[1].strip() for t in range(K)]
         for k, p in procs.items()}
for k in procs:
    if first[k] != first["plain"]:
        sys.exit("bench/adapter: %s's losses at model@0 %s, the plain "
                 "loop's %s: not the same work" % (
                     k, b" ".join(first[k]).decode(),
                     b" ".join(first["plain"]).decode()))
pids = {k: tree_pids(p.pid) for k, p in procs.items()}
wall = {k: [] for k in procs}
cpu = {k: [] for k in procs}
flt = {k: [] for k in procs}
rwall = {k: [] for k in procs}          # each round's median
rcpu = {k: [] for k in procs}
for r in range(rounds):
    order = list(procs)
    order = order[r % len(order):] + order[:r % len(order)]
    for k in order:
        w, c = [], []
        for i in range(n):
            t = (r * n + i) % K
            c0, f0 = usage(pids[k])
            w0 = time.perf_counter()
            ask(procs[k], t)
            w.append(time.perf_counter() - w0)
            c1, f1 = usage(pids[k])
            c.append(c1 - c0)
            flt[k].append(f1 - f0)
        wall[k] += w
        cpu[k] += c
        rwall[k].append(statistics.median(w))
        rcpu[k].append(statistics.median(c))
for k, p in procs.items():
    if sorted(tree_pids(p.pid)) != sorted(pids[k]):
        print("bench/adapter: %s: its processes changed meanwhile (a "
              "pipe restarted?): its CPU figures are short" % k)
    p.stdin.close()
    if p.wait() != 0:
        sys.exit("bench/adapter: the %s process exited %d" % (
            k, p.returncode))

# ---- the cold start ----
sys.path.insert(0, os.path.dirname(os.path.abspath(module)))
name = os.path.basename(module)[:-3]
build = ("import sys; sys.path.insert(0, %r); import torch, %s; "
         "%s.model()" % (os.path.dirname(os.path.abspath(module)), name,
                         name))
cold_cmds = {
    "python3": [sys.executable, "-c", "pass"],
    "import torch": [sys.executable, "-c", "import torch"],
    "+ build": [sys.executable, "-c", build],
    "spirt-torch grad": ["spirt-torch", "grad", "-q", "-m", model,
                         "--module", module, "-b", str(batch), "-t", "0",
                         "-w", "0", "-o", os.devnull],
}
cold = {k: ([], []) for k in cold_cmds}
for r in range(min(rounds, 5)):
    for k, cmd in cold_cmds.items():
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            sys.exit("bench/adapter: %s exited %d" % (k, p.returncode))
        cold[k][0].append(time.perf_counter() - t0)
        cold[k][1].append(ru.ru_utime + ru.ru_stime)


def q(v, scale=1e3, unit="ms"):
    """median (first quartile-third quartile)"""
    if len(v) < 2:
        return "%.2f %s" % (scale * v[0], unit)
    a, _, b = statistics.quantiles(v, n=4)
    return "%.2f %s (%.2f-%.2f)" % (scale * statistics.median(v), unit,
                                    scale * a, scale * b)


def ratio(a, b):
    rs = [x / y for x, y in zip(a, b)]
    return q(rs, 1, "x")


nparams = tensor.decode(store_cmd("get", "model/%s@0" % model))[0].array.size
print("cpu: %s, pinned to CPU %d of %d; batch %d, %d params, %d rounds of "
      "%d steps each, medians (quartiles)" % (
          cpu_name(), cpu_pin, os.cpu_count(), batch, nparams, rounds, n))
print("losses at model@0 agree: %s" % b" ".join(first["plain"]).decode())
for k in procs:
    print("%-7s wall %s, CPU %s, %d minor faults a step" % (
        k + ":", q(wall[k]), q(cpu[k]), statistics.median(flt[k])))
for a, b in (("warm", "plain"), ("warm", "untuned"), ("untuned", "plain"),
             ("before", "plain"), ("before", "untuned"),
             ("warm", "before")):
    if a in procs:
        print("%s / %s, each round's medians: CPU %s, wall %s" % (
            a, b, ratio(rcpu[a], rcpu[b]), ratio(rwall[a], rwall[b])))
for k, (w, c) in cold.items():
    print("cold, %-17s wall %s, CPU %s" % (
        k + ":", q(w, 1, "s"), q(c, 1, "s")))
