"""bench/adapter.py - spirt-torch's warm step against a plain PyTorch loop.

    python3 bench/adapter.py STORE MODULE MODEL BATCH ROUNDS N [BEFORE]

One thread each.  In each of ROUNDS interleaved rounds, each round led by
the next in turn: N steps of a plain PyTorch loop (zero the gradients,
forward, loss, backward, an SGD update) on the minibatch of (step 0,
worker 0), which spirt-store batch serves; and N requests "0 0" to one
warm `spirt-torch grad -i` (the same module, model/MODEL@0, the same
batch; its gradient read, computed and written through its spirt-store
pipe), timed from the request's write to its answer.  With BEFORE, a
directory holding another version's spirt package (python/ of an older
tree), a second warm function runs that one in the same rounds, with
the spirt-store beside that python/ if there is one: before and after side
by side.  Then ROUNDS cold invocations, each beside a
`python3 -c 'import torch'`.  Prints the CPU (/proc/cpuinfo), medians
(min-max) and the ratios.
"""
import io
import os
import statistics
import subprocess
import sys
import time

store, module, model, batch, rounds, n = sys.argv[1:7]
before = sys.argv[7] if len(sys.argv) > 7 else None
batch, rounds, n = int(batch), int(rounds), int(n)
os.environ["OMP_NUM_THREADS"] = os.environ["OPENBLAS_NUM_THREADS"] = "1"
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.set_num_threads(1)
env = dict(os.environ, SPIRT_STORE=store)
b = subprocess.run(["spirt-store", "batch", "-t", "0", "-w", "0", "-b",
                    str(batch), "--npy"], env=env, check=True,
                   stdout=subprocess.PIPE).stdout
f = io.BytesIO(b)
x = torch.from_numpy(np.load(f))
y = torch.from_numpy(np.load(f).astype(np.int64))
sys.path.insert(0, os.path.dirname(os.path.abspath(module)))
mod = __import__(os.path.basename(module)[:-3])
torch.manual_seed(0)
net = mod.model()
params = list(net.parameters())


def function(pythonpath=None):
    """A warm spirt-torch; with pythonpath, the spirt package there (the
    script would put its tree's first)"""
    e, cmd = dict(env), ["spirt-torch"]
    if pythonpath:
        e["PYTHONPATH"] = pythonpath
        tree = os.path.dirname(os.path.abspath(pythonpath))
        if os.access(os.path.join(tree, "spirt-store"), os.X_OK):
            e["PATH"] = tree + os.pathsep + e["PATH"]
        cmd = [sys.executable, "-m", "spirt.torch"]
    return subprocess.Popen(cmd + ["grad", "-i", "-q", "-m", model,
                                   "--module", module, "-b", str(batch)],
                            env=e, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)


def warm_once(fn):
    t0 = time.perf_counter()
    fn.stdin.write(b"0 0\n")
    fn.stdin.flush()
    ans = fn.stdout.readline()
    if not ans.startswith(b"step=0 worker=0 samples="):
        sys.exit("bench/adapter: answer %r" % ans)
    return time.perf_counter() - t0


def plain_once():
    t0 = time.perf_counter()
    for p in params:
        p.grad = None
    loss = F.cross_entropy(net(x), y)
    loss.backward()
    with torch.no_grad():
        for p in params:
            p -= 0.01 * p.grad
    return time.perf_counter() - t0


def cpu(pid):
    """CPU seconds of pid, its reaped children and its live ones (its
    spirt-store pipe; the spirt-store commands it ran): utime, stime,
    cutime, cstime of each"""
    try:
        with open("/proc/%d/stat" % pid) as f:
            v = f.read().rsplit(")", 1)[1].split()
        kids = []
        for task in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, task)) as f:
                kids += [int(k) for k in f.read().split()]
    except OSError:         # gone meanwhile: its parent counts it
        return 0.0
    return sum(int(x) for x in v[11:15]) / os.sysconf("SC_CLK_TCK") + \
        sum(cpu(k) for k in kids)


def cpu_name():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


fns = {"warm": function()}
if before:
    fns["before"] = function(before)
for fn in fns.values():
    warm_once(fn)       # the first request loads what it loads
plain_once()
step = {k: [] for k in ["plain"] + list(fns)}
busy = {k: [] for k in step}
for r in range(rounds):
    order = list(step)
    order = order[r % len(order):] + order[:r % len(order)]
    for k in order:
        if k == "plain":
            c0 = time.process_time()
            step[k] += [plain_once() for _ in range(n)]
            busy[k].append((time.process_time() - c0) / n)
            continue
        c0 = cpu(fns[k].pid)
        step[k] += [warm_once(fns[k]) for _ in range(n)]
        busy[k].append((cpu(fns[k].pid) - c0) / n)
for k, fn in fns.items():
    fn.stdin.close()
    if fn.wait() != 0:
        sys.exit("bench/adapter: the %s function exited %d" % (
            k, fn.returncode))
cold, imp = [], []
for r in range(rounds):
    t0 = time.perf_counter()
    subprocess.run(["spirt-torch", "grad", "-q", "-m", model, "--module",
                    module, "-b", str(batch), "-t", "0", "-w", "0", "-o",
                    os.devnull], env=env, check=True)
    cold.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch"], check=True)
    imp.append(time.perf_counter() - t0)


def ms(v):
    return "%.2f ms (%.2f-%.2f)" % (1e3 * statistics.median(v),
                                    1e3 * min(v), 1e3 * max(v))


def sec(v):
    return "%.2f s (%.2f-%.2f)" % (statistics.median(v), min(v), max(v))


med = {k: statistics.median(v) for k, v in step.items()}
cmed = {k: statistics.median(v) for k, v in busy.items()}
print("cpu: %s, %d online; batch %d, %d params, %d rounds of %d steps, "
      "medians (min-max)" % (cpu_name(), os.cpu_count(), batch,
                             sum(p.numel() for p in params), rounds, n))
print("plain PyTorch step:   %s" % ms(step["plain"]))
print("spirt-torch warm:     %s" % ms(step["warm"]))
print("ratio (medians):      %.2fx" % (med["warm"] / med["plain"]))
if before:
    print("warm, before:         %s, ratio %.2fx" % (
        ms(step["before"]), med["before"] / med["plain"]))
print("CPU a step, plain:    %s" % ms(busy["plain"]))
print("CPU a step, warm:     %s (the function and its spirt-store)" %
      ms(busy["warm"]))
print("ratio (CPU medians):  %.2fx" % (cmed["warm"] / cmed["plain"]))
if before:
    print("CPU a step, before:   %s, ratio %.2fx" % (
        ms(busy["before"]), cmed["before"] / cmed["plain"]))
print("spirt-torch cold:     %s" % sec(cold))
print("python3 -c 'import torch': %s" % sec(imp))
